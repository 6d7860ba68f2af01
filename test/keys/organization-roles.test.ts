import { describe, expect, it } from "vitest";
import { decideRoleGrant, effectiveRoleOf, mayDo } from "../../src/keys/organization-roles";

/** Who may do what in an organization (C14): the table and the grant decision, as pure functions. */

describe("organization roles", () => {
  it("every role manages keys; only owners and admins set limits, defaults, read others' activity and grant", () => {
    for (const role of ["owner", "admin", "member"] as const) expect(mayDo(role, "manage-keys")).toBe(true);
    for (const action of [
      "set-key-limits",
      "set-key-defaults",
      "read-members-activity",
      "grant-roles",
    ] as const) {
      expect(mayDo("owner", action)).toBe(true);
      expect(mayDo("admin", action)).toBe(true);
      expect(mayDo("member", action)).toBe(false);
    }
  });

  it("a provider's role claim wins over the grants; no grant and no claim is a member", () => {
    expect(effectiveRoleOf("owner", "member")).toBe("member");
    expect(effectiveRoleOf("member", "admin")).toBe("admin");
    expect(effectiveRoleOf("admin", undefined)).toBe("admin");
    expect(effectiveRoleOf(undefined, null)).toBe("member");
  });

  it("only an owner makes owners or changes an owner's role; the last owner stays", () => {
    const decide = (
      actorRole: "owner" | "admin" | "member",
      target: "owner" | "admin" | "member" | undefined,
      role: "owner" | "admin" | "member",
      ownerCount = 1,
    ) => decideRoleGrant({ actorRole, target, role, ownerCount }).outcome;
    expect(decide("member", undefined, "member")).toBe("refused");
    expect(decide("admin", "member", "owner")).toBe("refused");
    expect(decide("admin", "owner", "member", 2)).toBe("refused");
    expect(decide("admin", "member", "admin")).toBe("grant");
    expect(decide("owner", "admin", "owner")).toBe("grant");
    expect(decide("owner", "owner", "admin", 1)).toBe("refused");
    expect(decide("owner", "owner", "admin", 2)).toBe("grant");
    expect(decide("owner", "admin", "admin")).toBe("unchanged");
  });
});
