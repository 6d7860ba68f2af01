/** A model slug the catalog does not know (C3: 404/120 at the edge). */
export class UnknownModelError extends Error {
  override readonly name = "UnknownModelError";
  constructor(readonly model: string) {
    super(`Unknown model: ${model}`);
  }
}
