/**
 * The layers of the service, bottom up; a module may import only from its own layer or one below, so no
 * folder can import upwards and no two folders can import each other (a cycle would need one upward edge).
 * `npm run lint` runs this. README, "Layout", names what each layer holds.
 */
const layers = [
  ["kernel", "^src/kernel/"],
  ["database", "^src/database/"],
  ["ledger", "^src/ledger/"],
  ["projections", "^projections/"],
  ["providers", "^src/providers/"],
  ["sessions", "^src/sessions/"],
  ["keys", "^src/keys/"],
  ["billing", "^src/billing/"],
  ["workers", "^workers/"],
  ["gateway", "^src/gateway/"],
  ["operations", "^src/operations/"],
  ["composition root", "^src/[^/]+$"],
];

const upwardImports = layers.slice(0, -1).map(([name, path], index) => ({
  name: `no-import-above-${name.replaceAll(" ", "-")}`,
  comment: `${name} may import only from ${layers
    .slice(0, index + 1)
    .map(([layer]) => layer)
    .join(", ")}`,
  severity: "error",
  from: { path },
  to: { path: layers.slice(index + 1).map(([, above]) => above) },
}));

module.exports = {
  forbidden: [
    ...upwardImports,
    {
      name: "every-folder-in-a-layer",
      comment: "a new folder of src/ must be given its place in the layers above, or nothing constrains it",
      severity: "error",
      from: { path: "^src/[^/]+/", pathNot: layers.map(([, path]) => path) },
      to: {},
    },
    {
      name: "no-test-code-outside-tests",
      comment: "the service and the benchmarks never import test code",
      severity: "error",
      from: { path: ["^src/", "^projections/", "^workers/", "^bench/", "^console/"] },
      to: { path: "^test/" },
    },
    {
      name: "no-circular-modules",
      severity: "error",
      from: { path: ["^src/", "^projections/", "^workers/"] },
      to: { circular: true },
    },
  ],
  options: {
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^node_modules/", "^console/dist/", "^dist/"] },
    tsPreCompilationDeps: true,
    // TypeScript 7 has no JavaScript API for dependency-cruiser to parse with; swc parses TypeScript natively.
    parser: "swc",
  },
};
