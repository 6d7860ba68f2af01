import { loadOrCreateLedgerSigningKey, readLocalLedgerSigningKey } from "../../database/local-data";
import { ConfigError } from "../../kernel/config-error";
import { LedgerSigningKey } from "./ledger-signing-key";

/**
 * The checkpoint signing key of this deployment: `LEDGER_SIGNING_KEY`, else, embedded (no DATABASE_URL),
 * the one generated and kept in `./.data/`. Undefined with a DATABASE_URL and no key: nothing is sealed.
 */
export async function ledgerSigningKeyOf(config: {
  ledgerSigningKey: string | undefined;
  databaseUrl: string | undefined;
}): Promise<LedgerSigningKey | undefined> {
  if (config.ledgerSigningKey) {
    try {
      return LedgerSigningKey.parse(config.ledgerSigningKey);
    } catch (error) {
      throw new ConfigError(`invalid configuration: LEDGER_SIGNING_KEY ${(error as Error).message}`);
    }
  }
  if (config.databaseUrl) return undefined;
  return LedgerSigningKey.parse(await loadOrCreateLedgerSigningKey(LedgerSigningKey.generateSeed));
}

/**
 * The key a receipt is checked against when none is given: found as `ledgerSigningKeyOf` finds it
 * (`LEDGER_SIGNING_KEY`, else `./.data/` when there is no DATABASE_URL), but never generated, since a new key
 * has signed nothing.
 */
export async function existingLedgerSigningKeyOf(config: {
  ledgerSigningKey: string | undefined;
  databaseUrl: string | undefined;
}): Promise<LedgerSigningKey | undefined> {
  if (config.ledgerSigningKey || config.databaseUrl) return ledgerSigningKeyOf(config);
  const seed = await readLocalLedgerSigningKey();
  return seed === undefined ? undefined : LedgerSigningKey.parse(seed);
}
