import { useCallback, useRef } from "react";

/**
 * A form's submissions one at a time: a second click or Enter while the first is on its way is dropped. A
 * button disabled while its mutation is pending is not enough: TanStack Query tells React of the pending
 * state on a timer, a task after the click, and a double click's second click (input outranks timers in the
 * browser) lands before it — two keys, two endpoints, two top-ups. This flag is set before the request leaves.
 *
 * `send` returns the request's promise, or nothing when it sent nothing (a field said invalid).
 */
export function useOneSubmissionAtATime(): (send: () => Promise<unknown> | undefined) => void {
  const inFlight = useRef(false);
  return useCallback((send) => {
    if (inFlight.current) return;
    const sent = send();
    if (sent === undefined) return;
    inFlight.current = true;
    const release = () => {
      inFlight.current = false;
    };
    // Also marks the promise handled: its error is shown by the mutation's own state.
    sent.then(release, release);
  }, []);
}
