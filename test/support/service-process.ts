import { type ChildProcess, spawn } from "node:child_process";
import { expect } from "vitest";

/** A service process started the way operators start it, its output kept for the test to read. */
export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
}

/** Spawns the process and resolves once its output shows `readyLine`; fails if it exits or takes 90 s. */
export async function spawnService(
  command: string,
  args: readonly string[],
  environment: NodeJS.ProcessEnv,
  options: { readyLine: string; detached?: boolean },
): Promise<ServiceProcess> {
  const child = spawn(command, args, {
    env: environment,
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
  while (!output.includes(options.readyLine)) {
    if (child.exitCode !== null) throw new Error(`${command} ${args.join(" ")} exited: ${output}`);
    if (Date.now() > deadlineMs) throw new Error(`${command} ${args.join(" ")} did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, output: () => output };
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
