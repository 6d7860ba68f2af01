/** Invalid configuration: the process stops at start with this one line, naming the variable (C2). */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}
