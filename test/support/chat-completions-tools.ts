/** Two function tools in the chat-completions shape, for tests that ask for tool calls (one or both). */

export const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
    },
  },
};

export const timeTool = {
  type: "function" as const,
  function: {
    name: "get_time",
    description: "The local time in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
