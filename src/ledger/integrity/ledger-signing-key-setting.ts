import { loadOrCreateLedgerSigningKey } from "../../database/local-data";
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
