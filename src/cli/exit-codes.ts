/**
 * genpipe's exit codes, in one table: 0 success, 1 a failed call or batch item, 2 usage or
 * configuration errors, 3 a batch the service stopped early (authentication, suspended client,
 * insufficient balance, service unreachable, journal unwritable), 130 / 143 interrupted by SIGINT /
 * SIGTERM (128 + the signal's number).
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  stoppedEarly: 3,
  interrupted: 130,
  terminated: 143,
} as const;

/** The exit code of a process that ended on a signal. */
export const SIGNAL_EXIT: Readonly<Record<'SIGINT' | 'SIGTERM', number>> = {
  SIGINT: EXIT.interrupted,
  SIGTERM: EXIT.terminated,
};

/**
 * `code`, with an interruption told apart by the signal that caused it (130 for SIGINT, 143 for
 * SIGTERM); without a signal an interruption stays 130.
 *
 * @example signalExit(EXIT.interrupted, 'SIGTERM') // 143
 */
export function signalExit(code: number, received: 'SIGINT' | 'SIGTERM' | null): number {
  return code === EXIT.interrupted && received ? SIGNAL_EXIT[received] : code;
}
