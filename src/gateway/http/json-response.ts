import type { ServerResponse } from "node:http";

/** The one way a JSON body leaves the lean edge: same content type as express's `res.json`. */
export function sendJson(response: ServerResponse, httpStatus: number, body: unknown): void {
  sendJsonText(response, httpStatus, JSON.stringify(body));
}

/** For bodies serialised once and reused (the models list). */
export function sendJsonText(response: ServerResponse, httpStatus: number, text: string): void {
  response.statusCode = httpStatus;
  response.setHeader("content-type", "application/json; charset=utf-8");
  response.setHeader("content-length", Buffer.byteLength(text));
  response.end(text);
}
