import pg from "pg";

/**
 * The statement's own data was refused: SQLSTATE class 22 (data exception — a value out of its column's
 * range, text its type cannot read) or 23 (integrity constraint violation — NOT NULL, CHECK, a key). The same
 * statement without the offending row would succeed, unlike an outage, a cancelled statement or a missing
 * object, which fail whatever the rows.
 */
export function isDataError(error: unknown): error is pg.DatabaseError {
  return error instanceof pg.DatabaseError && typeof error.code === "string" && /^2[23]/.test(error.code);
}

/**
 * A data error as a log line's `err`: name, SQLSTATE and message, never the refused value. A class 22 message
 * quotes the value it refused (`value "3000000000" is out of range for type integer`), which is the row's
 * content: everything from its first to its last double quote is elided, so a quote inside the value cannot
 * end the elision early. A class 23 message names only the column, table or constraint (the values are in its
 * detail, which this leaves out), and is kept.
 */
export function dataErrorSummaryOf(error: pg.DatabaseError): { name: string; code: string; message: string } {
  const code = error.code ?? "";
  const message = code.startsWith("22") ? error.message.replace(/".*"/s, '"…"') : error.message;
  return { name: error.name, code, message };
}

/**
 * The server answered the statement with an error, so the transaction it ran in rolled back: nothing of it
 * committed (a read-only server, a cancelled statement, a lock wait given up, a refused connection). Not so
 * for a lost connection (SQLSTATE class 08) or a backend the server ended (class 57P: a shutdown, a crash),
 * which may be all the client heard of a commit that happened.
 */
export function isRolledBack(error: unknown): error is pg.DatabaseError {
  return error instanceof pg.DatabaseError && typeof error.code === "string" && !/^(08|57P)/.test(error.code);
}
