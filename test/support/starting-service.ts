import { type RunningService, type ServiceOptions, startService } from "../../src/service";

/** A service started without waiting for it: its start to await, and whether it has started yet. */
export class StartingService {
  ready = false;
  readonly starting: Promise<RunningService>;

  /** `running` gets the service once started, for the test to close. */
  constructor(options: ServiceOptions, running: RunningService[]) {
    this.starting = startService(options).then((service) => {
      running.push(service);
      this.ready = true;
      return service;
    });
  }
}
