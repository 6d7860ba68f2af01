import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { RequestRecorder, recordedRequestsMax } from "../../src/providers/simulator/request-recorder";

describe("the simulator's request recorder", () => {
  it("keeps the last requests within its bound and counts every one received", () => {
    const recorder = new RequestRecorder();
    const received = recordedRequestsMax + 6;
    for (let index = 0; index < received; index++) {
      const request = new IncomingMessage(new Socket());
      request.method = "POST";
      request.url = `/v1/chat/completions?n=${index}`;
      recorder.record(request, new ServerResponse(request), {});
    }

    expect(recorder.all()).toHaveLength(recordedRequestsMax);
    expect(recorder.all()[0]?.path).toBe("/v1/chat/completions?n=6");
    expect(recorder.receivedCount).toBe(received);
    recorder.clear();
    expect(recorder.receivedCount).toBe(received);
  });
});
