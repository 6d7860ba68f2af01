import type pg from "pg";
import type { AccountReference } from "../../ledger/events";

/**
 * What the orphan sweep keeps back of the holds it settled while their gateways still had their sessions,
 * until each gateway settles its request after all, loses its session, or the reserve's time passes
 * (src/ledger/schema/holds/swept-hold-reserves.ts says why). A swept hold row gets its reserve with its
 * completion (hold-row-completion.ts, `completeSwept`); a hold an earlier release logged alone gets it here,
 * before its settlement is appended.
 */
export class SweptHoldReserves {
  constructor(private readonly database: Pick<pg.Pool, "query">) {}

  /**
   * Keeps back what `estimatedCostWon` does not use of a hold (`holdWon`, or its estimate when larger: a hold
   * cut to the room left) on the account for `reserveMs`. Placed before the settlement is appended, so no
   * snapshot sees the hold released and not yet reserved; `release` it if the settlement is not appended.
   */
  async reserve(
    hold: {
      requestId: string;
      account: AccountReference;
      keyId: string;
      startedAt: string;
      gatewayInstance: string;
    },
    amounts: { holdWon: string; estimatedWon: string; estimatedCostWon: string },
    reserveMs: number,
  ): Promise<void> {
    await this.database.query({
      name: "swept-hold-reserve",
      text: `INSERT INTO swept_hold_reserves (request_id, account_kind, account_id, key_id, month, gateway_instance,
                                              reserved_won, reserved_until)
             SELECT $1, $2, $3, $4, ledger_seoul_month($5), $6, unused.won, now() + make_interval(secs => $10 / 1000.0)
             FROM (SELECT greatest($7::numeric, $8::numeric) - $9::numeric AS won) unused
             WHERE unused.won > 0
             ON CONFLICT (request_id) DO NOTHING`,
      values: [
        hold.requestId,
        hold.account.kind,
        hold.account.id,
        hold.keyId,
        hold.startedAt,
        hold.gatewayInstance,
        amounts.holdWon,
        amounts.estimatedWon,
        amounts.estimatedCostWon,
        reserveMs,
      ],
    });
  }

  /** The request's gateway settled it (or the sweep did not): what was kept back is free again. */
  async release(requestId: string): Promise<void> {
    await this.database.query({
      name: "swept-hold-release",
      text: "DELETE FROM swept_hold_reserves WHERE request_id = $1",
      values: [requestId],
    });
  }

  /**
   * Removes the reserves that ended without a settlement: past their time (the accounts' funds no longer
   * count them already), or of a gateway whose session is gone — it died, and will bill nothing more.
   */
  async releaseEnded(): Promise<void> {
    await this.database.query(
      `DELETE FROM swept_hold_reserves
       WHERE reserved_until <= now() OR NOT ledger_gateway_session_alive(gateway_instance)`,
    );
  }
}
