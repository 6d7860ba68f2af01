import { randomUUID } from "node:crypto";
import { EventStoreDBClient, FORWARDS, START } from "@eventstore/db-client";
import { describe, expect, it } from "vitest";
import { eventChainHash, genesisHash } from "../../../src/ledger/integrity/event-hash";
import { EventStoreDbEventStore } from "../../../src/ledger/store/eventstoredb-event-store";
import { topUp } from "../../support/ledger-fixtures";
import { describeEventStoreContract } from "./event-store-contract";

const eventStoreUrl = process.env.EVENTSTORE_URL;

if (eventStoreUrl) {
  describeEventStoreContract("EventStoreDB", async () => {
    const store = new EventStoreDbEventStore(eventStoreUrl);
    return { store, dispose: () => store.close() };
  });

  describe("EventStoreDB hash chain", () => {
    it("chains each event to its stream's previous one, as PostgreSQL does", async () => {
      const store = new EventStoreDbEventStore(eventStoreUrl);
      const client = EventStoreDBClient.connectionString`${eventStoreUrl}`;
      try {
        const streamId = `account-user-chain-${randomUUID()}`;
        await store.append({
          streamId,
          expectedVersion: "no-stream",
          events: [topUp("c", "1", "a"), topUp("c", "2", "b")],
        });
        await store.append({ streamId, expectedVersion: "any", events: [topUp("c", "3", "c")] });
        let previous = genesisHash;
        let count = 0;
        for await (const resolved of client.readStream(streamId, {
          direction: FORWARDS,
          fromRevision: START,
        })) {
          const event = resolved.event!;
          const { schemaVersion, chainHash, ...metadata } = event.metadata as Record<string, unknown>;
          const expected = eventChainHash(previous, {
            streamId,
            streamVersion: Number(event.revision),
            eventId: event.id,
            type: event.type,
            schemaVersion: schemaVersion as number,
            dataText: JSON.stringify(event.data),
            metadataText: JSON.stringify(metadata),
          });
          expect(chainHash).toBe(expected.toString("hex"));
          previous = expected;
          count++;
        }
        expect(count).toBe(3);
      } finally {
        await client.dispose();
        await store.close();
      }
    });
  });
} else {
  describe("event store contract: EventStoreDB", () => {
    it.skip("runs when EVENTSTORE_URL points at a server (none is configured)", () => {});
  });
}
