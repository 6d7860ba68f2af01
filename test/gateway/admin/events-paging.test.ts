import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BillingApiHarness, startBillingApi } from "./billing-api-harness";

/**
 * `GET /admin/events` newest first, paged to its end: the last page says it is the last. (Followed in log order
 * while a transaction commits late: events-follow-late-commits.test.ts.)
 */

let api: BillingApiHarness;
let sequence = 0;

beforeEach(async () => {
  api = await startBillingApi(`admin_events_paging_${sequence++}`);
});

afterEach(async () => {
  await api.close();
});

interface EventsPage {
  data: { type: string; data: { reference?: string } }[];
  next: string | null;
}

async function events(query: string): Promise<EventsPage> {
  const response = await api.admin("GET", `/events?${query}`);
  expect(response.status).toBe(200);
  return (await response.json()) as EventsPage;
}

describe("GET /admin/events newest first", () => {
  it("given exactly two pages of events, then the second says it is the last: no empty page after it", async () => {
    // Given: four top-ups
    for (const amountWon of ["1", "2", "3", "4"])
      expect((await api.admin("POST", "/accounts/user/pager/credits", { amountWon })).status).toBe(201);

    // When
    const newest = await events("type=CreditToppedUp&order=desc&limit=2");
    const older = await events(`type=CreditToppedUp&limit=2&before=${newest.next}`);

    // Then
    expect(newest.next).not.toBeNull();
    expect(older.data).toHaveLength(2);
    expect(older.next).toBeNull();
  });
});
