import type { ClientBase } from "pg";
import { type BrokenLink, describeBrokenLink } from "./ledger-integrity";

/**
 * The stream hash chains of the whole log checked by PostgreSQL itself, in one statement: the check a rebuild
 * makes before it folds, so that it never replaces the projections with a fold of events altered since they
 * were written. The same links as `ledger verify`'s first pass (ledger-integrity.ts), judged by the same
 * hash (`ledger_event_hash`), each event against its predecessor's stored hash — but the log never crosses
 * the network, and each event is joined to its predecessor rather than the log sorted by stream, so workers
 * hash it in parallel (docs/ledger.md, "Rebuilds", has the costs).
 */

export interface BrokenChains {
  /** The streams whose chain does not hold. */
  brokenCount: number;
  /** Each one's first broken link, for the first streams in order, as verify names them. */
  first: string[];
}

/** In the caller's transaction: the planner settings it changes last until that transaction ends. */
export async function brokenChainLinks(
  client: Pick<ClientBase, "query">,
  namedMax: number,
): Promise<BrokenChains> {
  // Hashing is the cost, and each event's hash needs only its predecessor: joined by the stream's key, the
  // log is hashed in parallel workers (the planner prices the hash as nearly free, so it is told to split).
  await client.query("SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0");
  const result = await client.query<{
    stream_id: string;
    stream_version: number;
    event_id: string;
    expected_version: number;
    problem: BrokenLink["problem"];
    broken_count: string;
  }>(
    `SELECT broken.stream_id, broken.stream_version, broken.event_id, broken.problem, broken.broken_count,
            (SELECT coalesce(max(earlier.stream_version) + 1, 0) FROM ledger_events earlier
             WHERE earlier.stream_id = broken.stream_id AND earlier.stream_version < broken.stream_version
            ) AS expected_version
     FROM (
       SELECT first_broken.*, count(*) OVER () AS broken_count
       FROM (
         -- A stream's first broken link: as verify says, the later ones are its consequences.
         SELECT DISTINCT ON (event.stream_id) event.stream_id, event.stream_version,
                event.event_id::text AS event_id, judged.problem
         FROM ledger_events event
         LEFT JOIN ledger_events previous
           ON previous.stream_id = event.stream_id AND previous.stream_version = event.stream_version - 1
         CROSS JOIN LATERAL (SELECT CASE
           WHEN event.stream_version > 0 AND previous.stream_id IS NULL THEN 'versions-missing'
           -- Only events written before the chain existed have no hash, and none follows a hashed one.
           WHEN event.chain_hash IS NULL THEN CASE WHEN previous.chain_hash IS NOT NULL THEN 'hash-removed' END
           WHEN event.chain_hash <> ledger_event_hash(coalesce(previous.chain_hash, decode(repeat('00', 32), 'hex')),
                  event.stream_id, event.stream_version, event.event_id, event.type, event.schema_version,
                  event.data, event.metadata)
             THEN 'hash-differs'
         END AS problem) judged
         WHERE judged.problem IS NOT NULL
         ORDER BY event.stream_id, event.stream_version
       ) first_broken
       ORDER BY first_broken.stream_id
       LIMIT $1
     ) broken
     ORDER BY broken.stream_id`,
    [namedMax],
  );
  return {
    brokenCount: Number(result.rows[0]?.broken_count ?? 0),
    first: result.rows.map((row) =>
      describeBrokenLink({
        streamId: row.stream_id,
        streamVersion: row.stream_version,
        eventId: row.event_id,
        expectedVersion: row.expected_version,
        problem: row.problem,
      }),
    ),
  };
}
