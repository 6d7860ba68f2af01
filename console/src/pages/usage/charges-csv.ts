import { userApi } from "../../lib/api";
import { chargesCsvHeader, chargesCsvRows } from "../../lib/csv";
import { saveFile } from "../../lib/file-download";
import type { DateRange } from "./use-usage-summary";

/** The API allows up to 1,000 charges a page: the export reads at that size. */
const exportPageRows = 1_000;

/** Every charge of the range, oldest first, read and written a page at a time, saved as a CSV file. */
export async function downloadChargesCsv(range: DateRange, isOrganization: boolean): Promise<void> {
  const parts = [chargesCsvHeader()];
  let cursor: string | undefined;
  do {
    const page = await userApi.chargesPage(range, isOrganization, {
      cursor,
      limit: exportPageRows,
      order: "oldest",
    });
    parts.push(chargesCsvRows(page.data));
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  const scope = isOrganization ? "organization" : "personal";
  saveFile(
    new Blob(parts, { type: "text/csv;charset=utf-8" }),
    `charges-${scope}-${range.from}-${range.to}.csv`,
  );
}
