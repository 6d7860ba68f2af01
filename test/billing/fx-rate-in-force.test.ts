import { describe, expect, it } from "vitest";
import {
  type FxRateRecord,
  isRefreshNeeded,
  selectFxRateInForce,
} from "../../src/billing/fx/fx-rate-in-force";

const history: FxRateRecord[] = [
  { appliesOn: "2026-03-01", rateDate: "2026-02-27", rateKrwPerUsd: "1400", source: "default" },
  { appliesOn: "2026-03-04", rateDate: "2026-03-03", rateKrwPerUsd: "1483.4", source: "koreaexim" },
  { appliesOn: "2026-03-05", rateDate: "2026-03-04", rateKrwPerUsd: "1490", source: "koreaexim" },
  { appliesOn: "2026-03-05", rateDate: "2026-03-04", rateKrwPerUsd: "1489.5", source: "admin" },
];

describe("selectFxRateInForce", () => {
  it("uses the record for the date itself", () => {
    expect(selectFxRateInForce(history, "2026-03-04")?.rateKrwPerUsd).toBe("1483.4");
  });

  it("keeps the latest earlier rate when a date has none (a failed refresh)", () => {
    // given no record applies on 2026-03-03 / when / then the one from 2026-03-01 holds
    expect(selectFxRateInForce(history, "2026-03-03")).toMatchObject({
      appliesOn: "2026-03-01",
      rateDate: "2026-02-27",
    });
  });

  it("lets the last record for a date win (an admin correction after the refresh)", () => {
    expect(selectFxRateInForce(history, "2026-03-05")?.rateKrwPerUsd).toBe("1489.5");
    expect(selectFxRateInForce(history, "2026-03-20")?.source).toBe("admin");
  });

  it("ignores records that apply later, whatever their position in the log", () => {
    // given a rate for 2026-03-10 recorded before an older one
    const outOfOrder: FxRateRecord[] = [
      { appliesOn: "2026-03-10", rateDate: "2026-03-09", rateKrwPerUsd: "1500", source: "admin" },
      { appliesOn: "2026-03-02", rateDate: "2026-02-27", rateKrwPerUsd: "1410", source: "koreaexim" },
    ];
    // when / then
    expect(selectFxRateInForce(outOfOrder, "2026-03-09")?.rateKrwPerUsd).toBe("1410");
  });

  it("returns null before the first rate", () => {
    expect(selectFxRateInForce(history, "2026-02-28")).toBeNull();
  });
});

describe("isRefreshNeeded", () => {
  it.each([
    ["2026-03-04", false],
    ["2026-03-03", true],
    ["2026-03-06", true],
  ])("on %s: %s", (date, expected) => {
    expect(isRefreshNeeded(history, date)).toBe(expected);
  });
});
