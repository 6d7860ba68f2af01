/** A JSON reply: its HTTP status and its body. */
export interface JsonReply {
  status: number;
  body: Record<string, unknown>;
}

/** Calls `origin` + `path` with a bearer token and, when given, a JSON body; the reply's status and JSON. */
export async function callJson(
  origin: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<JsonReply> {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
