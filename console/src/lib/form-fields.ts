/** Reading submitted forms: every field is text, trimmed, and an empty field often means "not given". */

export function fieldText(form: FormData, name: string): string {
  return String(form.get(name) ?? "").trim();
}

export function optionalFieldText(form: FormData, name: string): string | undefined {
  const text = fieldText(form, name);
  return text === "" ? undefined : text;
}

/** A decimal number as the pricing and FX APIs accept it: digits, optionally a point and more digits. */
export const decimalPattern = "\\d+(\\.\\d+)?";

/**
 * Empties a submitted form once the server accepted what it sent, and only then: a refused submission keeps
 * what was typed, beside the error that says what to change. `sent` is the mutation's promise (its error is
 * shown by the mutation's own state, so it is not rethrown here).
 */
export function resetWhenAccepted(form: HTMLFormElement, sent: Promise<unknown>): void {
  sent.then(
    () => form.reset(),
    () => {},
  );
}
