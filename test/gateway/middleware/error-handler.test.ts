import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { sendError, toApiError } from "../../../src/gateway/middleware/error-handler";
import { UnsupportedRequestError, UpstreamRejectedError } from "../../../src/providers/provider";

const silent = pino({ level: "silent" });

describe("toApiError: what an adapter refuses before any upstream call", () => {
  it("given a value the model's protocol cannot carry, then 400/100 with the message naming the field", () => {
    const error = toApiError(
      new UnsupportedRequestError('reasoning effort "xhigh": not supported by this model'),
    );
    expect({ status: error.httpStatus, code: error.applicationCode, message: error.message }).toEqual({
      status: 400,
      code: 100,
      message: 'reasoning effort "xhigh": not supported by this model',
    });
  });

  it("given an upstream's own refusal, then still 400/300: the two stay apart", () => {
    const error = toApiError(new UpstreamRejectedError(400, "Request contains an invalid argument."));
    expect({ status: error.httpStatus, code: error.applicationCode }).toEqual({ status: 400, code: 300 });
  });
});

describe("sendError: a failure after the body began", () => {
  it("given a chunked body half sent, then the client sees the transfer cut short, not a complete body", async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/csv" });
      response.write("request_id,amount_won\r\nreq_1,1.5\r\n");
      // The second page's read fails.
      setTimeout(
        () => sendError(response, new Error("connection terminated"), { logger: silent, requestId: "r" }),
        20,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const reply = await fetch(`http://127.0.0.1:${port}/export`);
      expect(reply.status).toBe(200);
      await expect(reply.text()).rejects.toThrow();
    } finally {
      server.close();
    }
  });
});
