import { fileURLToPath } from "node:url";

/**
 * The service and the ledger command as the image runs them (Dockerfile: `node --enable-source-maps
 * dist/main.js`): `npm run build`'s bundles of this checkout, which the global setup builds before any file
 * runs. Started through tsx, a process spent about 1.7 s more CPU loading the TypeScript (3.0 s against 1.3),
 * and the suite starts a few hundred on a machine its tests keep busy. Tests of the commands as the README
 * gives them (`npm start`, `npm run ledger`) still start them through tsx.
 */
export const serviceEntryArgs: readonly string[] = [
  "--enable-source-maps",
  fileURLToPath(new URL("../../dist/main.js", import.meta.url)),
];
export const ledgerCommandArgs: readonly string[] = [
  "--enable-source-maps",
  fileURLToPath(new URL("../../dist/ledger-cli.js", import.meta.url)),
];
