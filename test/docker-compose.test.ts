import { readFile } from "node:fs/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../src/config";

/**
 * docker-compose.yml (C1): two gateways and two workers on one PostgreSQL, one EventStoreDB and one Redis,
 * wired by the C2 variables. The file is parsed as Compose does (merge keys included) and its wiring checked.
 */

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  healthcheck?: { test: string[] };
}

let services: Record<string, ComposeService>;
const appServices = ["gateway-1", "gateway-2", "worker-1", "worker-2"];
const stores = ["postgres", "redis", "eventstore"];

beforeAll(async () => {
  const text = await readFile(new URL("../docker-compose.yml", import.meta.url), "utf8");
  services = (parse(text, { merge: true }) as { services: Record<string, ComposeService> }).services;
});

/** Compose's `${NAME:-default}` as Compose would resolve it with NAME unset. */
function resolved(value: string): string {
  return value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, "$1");
}

describe("docker-compose.yml", () => {
  it("runs two gateways and two workers with the npm scripts on node 20", () => {
    for (const name of ["gateway-1", "gateway-2"])
      expect(services[name]!.command).toEqual(["npm", "run", "start:gateway"]);
    for (const name of ["worker-1", "worker-2"])
      expect(services[name]!.command).toEqual(["npm", "run", "start:worker"]);
    for (const name of appServices) expect(services[name]!.image).toMatch(/^node:20/);
  });

  it("gives every app service the same stores and secrets", () => {
    const [first, ...others] = appServices.map((name) => services[name]!.environment!);
    for (const environment of others) expect(environment).toEqual(first);
    expect(first).toMatchObject({
      DATABASE_URL: expect.stringMatching(/^postgres:\/\/[^@]+@postgres:5432\//),
      EVENTSTORE_URL: expect.stringMatching(/^esdb:\/\/eventstore:2113/),
      REDIS_URL: "redis://redis:6379",
      HOST: "0.0.0.0",
    });
    for (const secret of ["SESSION_SECRET", "KEY_PEPPER", "ADMIN_TOKEN"])
      expect(first![secret]).toBeDefined();
  });

  it("holds a configuration the service accepts (C2)", () => {
    const environment = Object.fromEntries(
      Object.entries(services["gateway-1"]!.environment!).map(([name, value]) => [name, resolved(value)]),
    );
    const config = loadConfig(environment);
    expect(config).toMatchObject({ host: "0.0.0.0", port: 8080, redisUrl: "redis://redis:6379" });
    expect(config.adminToken).toBeDefined();
  });

  it("starts the app only once every store is healthy", () => {
    for (const name of appServices) {
      const dependsOn = services[name]!.depends_on!;
      for (const store of stores) expect(dependsOn[store]).toEqual({ condition: "service_healthy" });
      expect(dependsOn.install).toEqual({ condition: "service_completed_successfully" });
    }
    for (const store of stores) expect(services[store]!.healthcheck?.test.length).toBeGreaterThan(0);
  });

  it("publishes each gateway on its own host port, health-checked; workers publish nothing", () => {
    const published = ["gateway-1", "gateway-2"].map((name) => services[name]!.ports!);
    expect(published).toEqual([["8081:8080"], ["8082:8080"]]);
    for (const name of ["gateway-1", "gateway-2"])
      expect(services[name]!.healthcheck!.test.join(" ")).toContain("/healthz");
    for (const name of ["worker-1", "worker-2"]) expect(services[name]!.ports).toBeUndefined();
  });
});
