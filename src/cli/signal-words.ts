/**
 * How genpipe names the signals that stop it, in one place: the reason a batch (run, watch, their dry
 * runs, a distributed run) stopped on one, which the report, the closing summary and every file left
 * unprocessed repeat (`not processed: the batch stopped early (stopped by Ctrl-C / SIGINT)`). A signal
 * is how a watch normally ends (BatchCommand.endsOnSignal): its progress says `stopping: Ctrl-C / SIGINT`
 * (signalName), a run's `stopping early: stopped by Ctrl-C / SIGINT`; that `end` stays with the stop
 * (runner/stop-control.ts's BatchStop.end), so the files it left and the reports say the watch was
 * stopped (report-json.ts's unprocessedReason and reportStop), not that it stopped early.
 */

/** A signal genpipe answers by stopping. */
export type StopSignal = 'SIGINT' | 'SIGTERM';

/** The signal as a person knows it: Ctrl-C is what sends SIGINT from a terminal. */
export function signalName(signal: StopSignal): string {
  return signal === 'SIGINT' ? 'Ctrl-C / SIGINT' : 'SIGTERM';
}

/**
 * Why a batch stopped on `signal`.
 *
 * @example signalStopReason('SIGINT') // 'stopped by Ctrl-C / SIGINT'
 */
export function signalStopReason(signal: StopSignal): string {
  return `stopped by ${signalName(signal)}`;
}
