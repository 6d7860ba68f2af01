/**
 * The load every endpoint takes before anything of it is measured, so that its figures are a warm process's:
 * V8 compiles a function's optimized code only once it has run often, on threads beside the main one, and a
 * server's code paths are many. Recorded with `perf` over 10,000 requests at 32 connections (the `cost`
 * section's load) after 500 requests at 8 connections, the gateway spent 127 µs of CPU per request compiling,
 * the worker 67.5 and the floor's proxy 52.7 — the compiling tailing off over the load's first 7,000 requests —
 * and after 15,000 at 32 connections 26, 15 and 17. A cold process's figures weigh its warm-up, not its cost.
 */
export const warmUp = { connections: 32, requests: 10_000 } as const;

/**
 * Before a load at one connection that follows loads at many: code optimized for batches of many requests
 * meets batches of one and is compiled again (V8 logs the holds' batching deoptimized on "wrong map"). Over
 * 1,000 requests at one connection right after the loaded ones, the gateway spent 573 µs of CPU per request
 * compiling.
 */
export const warmUpAtOneConnection = { connections: 1, requests: 1_000 } as const;
