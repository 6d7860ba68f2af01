import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { expect } from "vitest";
import { serviceEntryArgs } from "./built-entries";

/** A service process started the way operators start it, its output kept for the test to read. */
export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  /** The whole output line that showed the process ready. */
  readyLine: string;
}

/**
 * Spawns the process and resolves once a whole line of its output shows `readyLine`; fails if it exits or
 * takes 90 s.
 */
export async function spawnService(
  command: string,
  args: readonly string[],
  environment: NodeJS.ProcessEnv,
  options: { readyLine: string; detached?: boolean; cwd?: string },
): Promise<ServiceProcess> {
  const child = spawn(command, args, {
    env: environment,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    detached: options.detached ?? false,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk) => {
    output += String(chunk);
  });
  child.stderr!.on("data", (chunk) => {
    output += String(chunk);
  });
  const deadlineMs = Date.now() + 90_000;
  for (;;) {
    // Only lines ended by a newline: a chunk may end inside one.
    const readyLine = output
      .split("\n")
      .slice(0, -1)
      .find((line) => line.includes(options.readyLine));
    if (readyLine !== undefined) return { child, output: () => output, readyLine };
    if (child.exitCode !== null) throw new Error(`${command} ${args.join(" ")} exited: ${output}`);
    if (Date.now() > deadlineMs) {
      // A test that fails here leaves no process behind it.
      child.kill("SIGKILL");
      throw new Error(`${command} ${args.join(" ")} did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Where a gateway started with `PORT=0` listens: the origin of the base URL in its "gateway listening" log
 * line. A port the test picked beforehand could be taken by any outgoing connection before the gateway
 * binds it.
 */
export function gatewayOriginOf(gateway: ServiceProcess): string {
  const { baseUrl } = JSON.parse(gateway.readyLine) as { baseUrl?: unknown };
  if (typeof baseUrl !== "string") throw new Error(`no base URL in the ready line: ${gateway.readyLine}`);
  return new URL(baseUrl).origin;
}

/** A session, credit and a personal key for `userId`, through the admin and key APIs. */
export async function provisionKeyWithCredit(
  url: string,
  adminToken: string,
  userId: string,
  amountWon: string,
): Promise<string> {
  const admin = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  const session = await fetch(`${url}/admin/sessions`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ userId }),
  });
  const { token } = (await session.json()) as { token: string };
  const credit = await fetch(`${url}/admin/accounts/user/${userId}/credits`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ amountWon, reference: "test" }),
  });
  expect(credit.status).toBe(201);
  const key = await fetch(`${url}/llm/apis`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "test", isOrganization: false }),
  });
  expect(key.status).toBe(201);
  return ((await key.json()) as { key: string }).key;
}

/** One short chat completion through the gateway at `url` with `key`: the status it was answered with. */
export function chatStatus(url: string, key: string): Promise<number> {
  return fetch(`${url}/llm/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gamma-4-3", messages: [{ role: "user", content: "Hi" }], max_tokens: 8 }),
  }).then((answer) => answer.status);
}

/** One role of the service (`src/main.ts --role=…`), as operators start it, once it says it is ready. */
export function spawnRole(
  role: "gateway" | "worker",
  environment: NodeJS.ProcessEnv,
): Promise<ServiceProcess> {
  return spawnService(process.execPath, [...serviceEntryArgs, `--role=${role}`], environment, {
    readyLine: role === "gateway" ? "gateway listening" : "worker running",
  });
}

/** Kills the process outright (SIGKILL: no drain, no flush) and waits until it has exited. */
export async function killOutright(running: ServiceProcess): Promise<void> {
  const exited = once(running.child, "exit");
  running.child.kill("SIGKILL");
  await exited;
}
