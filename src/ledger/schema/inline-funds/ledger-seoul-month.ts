import type { DeclaredFunction } from "../../../database/declared-schema";

/** The Seoul calendar month ('YYYY-MM') of an ISO instant (src/kernel/seoul-calendar.ts). */
export const ledgerSeoulMonthFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_seoul_month",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_seoul_month(instant text) RETURNS text LANGUAGE sql STABLE AS $$
      SELECT to_char(instant::timestamptz AT TIME ZONE 'Asia/Seoul', 'YYYY-MM')
    $$;
  `,
};
