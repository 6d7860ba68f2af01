import { responseBodyOf } from "../wire/response-body";
import { parseResponsesRequest, responsesParameterNames } from "../wire/responses-request";
import { openResponsesStream } from "../wire/responses-stream";
import { toGenerationRequest } from "../wire/to-generation-request";
import type { ClientFormat } from "./client-format";

export const responsesFormat: ClientFormat = {
  endpoint: "responses",
  parse: parseResponsesRequest,
  toGenerationRequest: (parsed, model) => toGenerationRequest(parsed, model, responsesParameterNames),
  jsonBody: responseBodyOf,
  openStream: openResponsesStream,
};
