import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { userApi } from "../../lib/api";
import { downloadChargesCsv } from "./charges-csv";
import type { DateRange } from "./use-usage-summary";

/** Charges one table page shows. */
export const chargesPageRows = 50;

/** The range's charges a page at a time, newest first: the cursors of the pages before are kept for Newer. */
export function useChargesPages(range: DateRange, isOrganization: boolean) {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const pageIndex = cursors.length - 1;
  const page = useQuery({
    queryKey: ["charges", range, isOrganization, cursors[pageIndex]],
    queryFn: () =>
      userApi.chargesPage(range, isOrganization, {
        cursor: cursors[pageIndex],
        limit: chargesPageRows,
        order: "newest",
      }),
    // The rows stay while the next page loads, so the table does not jump.
    placeholderData: keepPreviousData,
  });
  return { page, rows: page.data?.data ?? [], cursors, setCursors, pageIndex };
}

/** The CSV export in progress, or how the last one failed. */
export function useChargesCsvExport(range: DateRange, isOrganization: boolean) {
  const [exporting, setExporting] = useState(false);
  const [error, setError] = useState<unknown>(null);
  async function download() {
    setExporting(true);
    setError(null);
    try {
      await downloadChargesCsv(range, isOrganization);
    } catch (caught) {
      setError(caught);
    } finally {
      setExporting(false);
    }
  }
  return { exporting, error, download };
}
