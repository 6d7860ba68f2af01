import type { AccountReference, ApiKeyLimits, EventData, UnstampedLedgerEvent } from "../ledger/events";
import type { RecordedEvent } from "../ledger/store/event-store";

/**
 * The API key aggregate: its state is a fold of its own stream (`apikey-<uuid>`), and each command is a
 * pure decision on that state. Tenancy is checked here, against the stream, not against a projection.
 */

export type ApiKeyState =
  | { kind: "absent" }
  | { kind: "active" | "inactive"; owner: AccountReference; version: number }
  | { kind: "deleted"; owner: AccountReference; version: number };

export const initialApiKeyState: ApiKeyState = { kind: "absent" };

export function evolveApiKey(state: ApiKeyState, event: RecordedEvent): ApiKeyState {
  switch (event.type) {
    case "ApiKeyIssued":
      return { kind: "active", owner: event.data.owner, version: event.streamVersion };
    case "ApiKeyStatusChanged":
      if (state.kind === "absent") return state;
      return {
        kind: event.data.status === 1 ? "active" : "inactive",
        owner: state.owner,
        version: event.streamVersion,
      };
    case "ApiKeyLimitsSet":
      if (state.kind === "absent") return state;
      return { ...state, version: event.streamVersion };
    case "ApiKeyDeleted":
      if (state.kind === "absent") return state;
      return { kind: "deleted", owner: state.owner, version: event.streamVersion };
    default:
      return state;
  }
}

export function foldApiKey(events: readonly RecordedEvent[]): ApiKeyState {
  return events.reduce(evolveApiKey, initialApiKeyState);
}

export type ApiKeyCommand =
  | { type: "ChangeApiKeyStatus"; keyId: string; status: 0 | 1 }
  | { type: "DeleteApiKey"; keyId: string }
  | { type: "SetApiKeyLimits"; keyId: string; limits: ApiKeyLimits };

/** A session acts on the keys of the accounts it owns; an admin on every key. */
export type ApiKeyCaller = { owners: readonly AccountReference[] } | { admin: true };

export type ApiKeyDecision =
  | { outcome: "append"; event: UnstampedLedgerEvent; expectedVersion: number }
  | { outcome: "not-found" };

/** Someone else's key, a deleted key and no key look the same from outside: not found. */
export function decideApiKey(
  state: ApiKeyState,
  command: ApiKeyCommand,
  caller: ApiKeyCaller,
): ApiKeyDecision {
  if (state.kind === "absent" || state.kind === "deleted") return { outcome: "not-found" };
  const owned =
    "admin" in caller ||
    caller.owners.some((owner) => owner.kind === state.owner.kind && owner.id === state.owner.id);
  if (!owned) return { outcome: "not-found" };
  switch (command.type) {
    case "ChangeApiKeyStatus": {
      const data: EventData<"ApiKeyStatusChanged"> = {
        keyId: command.keyId,
        owner: state.owner,
        status: command.status,
      };
      return {
        outcome: "append",
        event: { type: "ApiKeyStatusChanged", data },
        expectedVersion: state.version,
      };
    }
    case "DeleteApiKey": {
      const data: EventData<"ApiKeyDeleted"> = { keyId: command.keyId, owner: state.owner };
      return { outcome: "append", event: { type: "ApiKeyDeleted", data }, expectedVersion: state.version };
    }
    case "SetApiKeyLimits": {
      const data: EventData<"ApiKeyLimitsSet"> = {
        keyId: command.keyId,
        owner: state.owner,
        ...command.limits,
      };
      return { outcome: "append", event: { type: "ApiKeyLimitsSet", data }, expectedVersion: state.version };
    }
    default: {
      const unreachable: never = command;
      throw new Error(`unknown command ${(unreachable as ApiKeyCommand).type}`);
    }
  }
}
