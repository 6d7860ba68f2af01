import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * Whether each account with a low-funds threshold was below it when last looked at: `balance.low` is sent
 * when it goes from not below (or never seen) to below, and armed again when funds rise to the threshold.
 */
export const alertBalanceStatesTable: DeclaredTable = {
  kind: "table",
  name: "alert_balance_states",
  sql: `
    CREATE TABLE alert_balance_states (
      account_kind text NOT NULL,
      account_id text NOT NULL,
      below boolean NOT NULL,
      changed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_kind, account_id)
    );
  `,
};
