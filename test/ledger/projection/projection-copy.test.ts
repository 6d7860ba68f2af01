import { describe, expect, it } from "vitest";
import { copyField } from "../../../src/ledger/projection/projection-copy";

describe("COPY text fields", () => {
  it("escapes what COPY's text format reads as separators, and writes null as \\N", () => {
    expect(copyField("text", "a\ttab, a\\backslash,\na newline\r")).toBe(
      "a\\ttab, a\\\\backslash,\\na newline\\r",
    );
    expect(copyField("text", null)).toBe("\\N");
    expect(copyField("text", "\\N")).toBe("\\\\N");
    expect(copyField("json", { note: "line\nbreak", "tab\tkey": 1 })).toBe(
      '{"note":"line\\\\nbreak","tab\\\\tkey":1}',
    );
    expect(copyField("boolean", false)).toBe("f");
    expect(copyField("numeric", "-12.000001")).toBe("-12.000001");
  });
});
