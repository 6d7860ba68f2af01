import { describe, it } from "vitest";
import { EventStoreDbEventStore } from "../../src/ledger/eventstoredb-event-store";
import { describeEventStoreContract } from "./event-store-contract";

const eventStoreUrl = process.env.EVENTSTORE_URL;

if (eventStoreUrl) {
  describeEventStoreContract("EventStoreDB", async () => {
    const store = new EventStoreDbEventStore(eventStoreUrl);
    return { store, dispose: () => store.close() };
  });
} else {
  describe("event store contract: EventStoreDB", () => {
    it.skip("runs when EVENTSTORE_URL points at a server (none is configured)", () => {});
  });
}
