import type { z } from "zod";

/** One documented route of the HTTP API: what the OpenAPI document says of it. */
export type ApplicationErrorCode = 100 | 110 | 120 | 130 | 140 | 150 | 160 | 300 | 400 | 401;
export type Security = "apiKey" | "session" | "admin" | "none";
export type Tag = "generation" | "keys" | "account" | "admin" | "operations";

export interface ApiRoute {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** OpenAPI path, parameters in braces. */
  path: string;
  tag: Tag;
  summary: string;
  security: Security | readonly Security[];
  pathParameters?: z.ZodType;
  query?: z.ZodType;
  /** Request headers the route reads beyond authentication (an object schema, names in lower case). */
  headers?: z.ZodType;
  body?: z.ZodType;
  /** Success responses by HTTP status. */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
  /** Errors the route may answer, by application code (C3); 503/300 is listed where the ledger is needed. */
  errors: ApplicationErrorCode[];
  ledgerUnavailable?: boolean;
}
