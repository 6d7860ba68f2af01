import { playgroundKeyDescriptionOf, playgroundKeyName } from "../kernel/system-texts";
import type { Session } from "../sessions/session-tokens";
import type { ApiKeyService, IssuedApiKey } from "./api-key-service";

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

export async function rotatePlaygroundKey(
  keys: Pick<ApiKeyService, "list" | "delete" | "issue">,
  session: Session,
  isOrganization: boolean,
  correlationId: string,
): Promise<IssuedApiKey> {
  const description = playgroundKeyDescriptionOf(session.userId);
  const previous = (await keys.list(session, isOrganization)).filter(
    (key) => key.name === playgroundKeyName && key.description === description,
  );
  for (const key of previous) await keys.delete(session, key.uuid, correlationId);
  return keys.issue(session, { name: playgroundKeyName, description, isOrganization }, correlationId);
}
