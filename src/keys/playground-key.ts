import { KeyedTurns } from "../kernel/keyed-turns";
import { playgroundKeyDescriptionOf, playgroundKeyName } from "../kernel/system-texts";
import type { Session } from "../sessions/session-tokens";
import { ApiKeyNotFoundError, type ApiKeyService, type IssuedApiKey } from "./api-key-service";

/**
 * The web console's playground generates through the public API (`/llm/v1`) with an ordinary API key of
 * the signed-in account, so its requests are admitted, held, recorded and charged exactly as a client's
 * are, and show in the activity log like any other. The console asks for the key when the playground
 * opens and keeps it in the page's memory only; each request for one deletes the previous playground key
 * of the same user on that account, so at most one exists per user and account (an organization's members
 * each have their own) and a key left in a closed tab dies with the next. It is listed among the account's
 * keys, where it can be limited or deleted like any other.
 */

export { playgroundKeyDescriptionOf, playgroundKeyName };

type KeyCommands = Pick<ApiKeyService, "list" | "delete" | "issue">;

export class PlaygroundKeys {
  /**
   * A user's rotations on one account take turns (the playground opened in several tabs at once): each
   * finds the key the one before it issued, so one key is left, not one per tab.
   */
  private readonly turns = new KeyedTurns();

  constructor(private readonly keys: KeyCommands) {}

  rotate(session: Session, isOrganization: boolean, correlationId: string): Promise<IssuedApiKey> {
    const account = isOrganization ? `organization:${session.organizationId}` : "personal";
    return this.turns.run(`${session.userId} ${account}`, () =>
      rotatePlaygroundKey(this.keys, session, isOrganization, correlationId),
    );
  }
}

async function rotatePlaygroundKey(
  keys: KeyCommands,
  session: Session,
  isOrganization: boolean,
  correlationId: string,
): Promise<IssuedApiKey> {
  const description = playgroundKeyDescriptionOf(session.userId);
  const previous = (await keys.list(session, isOrganization)).filter(
    (key) => key.name === playgroundKeyName && key.description === description,
  );
  for (const key of previous) await deleteUnlessGone(keys, session, key.uuid, correlationId);
  return keys.issue(session, { name: playgroundKeyName, description, isOrganization }, correlationId);
}

/** A previous key deleted meanwhile (by the user, or a rotation in another gateway process) is gone already. */
async function deleteUnlessGone(keys: KeyCommands, session: Session, keyId: string, correlationId: string) {
  try {
    await keys.delete(session, keyId, correlationId);
  } catch (error) {
    if (!(error instanceof ApiKeyNotFoundError)) throw error;
  }
}
