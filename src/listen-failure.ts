import { ConfigError } from "./kernel/config-error";

/** The address a process was told to listen on, and the variable that names its port. */
export interface ListenSetting {
  host: string;
  port: number;
  portVariable: "PORT" | "METRICS_PORT";
}

/**
 * A failure to listen that the configuration caused, as the one line naming the variable to change (C2);
 * undefined for any other failure, which stays the error it is.
 */
export function configErrorOfListenFailure(error: unknown, setting: ListenSetting): ConfigError | undefined {
  const { host, port, portVariable } = setting;
  switch ((error as { code?: unknown }).code) {
    case "EADDRINUSE":
      return new ConfigError(
        `invalid configuration: ${portVariable} ${port} is in use on ${host}; set ${portVariable} to a free port`,
      );
    case "EACCES":
      return new ConfigError(
        `invalid configuration: ${portVariable} ${port} needs privileges this process lacks; set ${portVariable} to 1024 or above`,
      );
    // getaddrinfo's answers for a name with no address (ENOTFOUND), or none for now (EAI_AGAIN).
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
      return new ConfigError(
        `invalid configuration: HOST ${host} does not resolve to an address; set HOST to an address of this machine (127.0.0.1, or 0.0.0.0 for all)`,
      );
    case "EADDRNOTAVAIL":
      return new ConfigError(
        `invalid configuration: HOST ${host} is not an address of this machine; set HOST to one (127.0.0.1, or 0.0.0.0 for all)`,
      );
    default:
      return undefined;
  }
}
