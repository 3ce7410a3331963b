/**
 * The flags of the commands that talk to the service, and the parsers of their values: what a command
 * is defined with, before it runs. Light on purpose — commander and the service's words only — so that
 * `genpipe <command> --help` does not load the client (make-client.ts runs a command's body with one).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { isRequestId, isUuid, LEGACY_BASE_PATH, REQUEST_ID_FORM } from '../spec/index.ts';
import { type ServiceFlags, serviceFlagHelp } from './service-config.ts';
import { UsageError } from './usage-error.ts';

/** Flags every client command takes. */
export interface ClientFlags extends ServiceFlags {
  json?: boolean;
  quiet?: boolean;
  /** Seconds between status reads while waiting (see addPollOption). */
  pollInterval?: number;
}

/** What --json and --quiet do, when a command's output is not one result (a batch's events). */
export interface OutputHelp {
  json?: string;
  quiet?: string;
}

/**
 * Adds the connection flags (--api-key, --base-url, --legacy-base-url, --legacy-token), --json and
 * --quiet to a command.
 */
export function addServiceOptions(cmd: Command, output: OutputHelp = {}): Command {
  for (const [flags, help] of serviceFlagHelp()) {
    cmd.option(
      flags,
      flags.startsWith('--legacy-base-url')
        ? help.replace(/\)$/, `, else <base-url>${LEGACY_BASE_PATH})`)
        : help,
    );
  }
  cmd.option(
    '--json',
    output.json ?? 'print machine-readable JSON on stdout (errors as one JSON line on stderr)',
  );
  cmd.option('-q, --quiet', output.quiet ?? 'no notes or progress on stderr');
  return cmd;
}

/** Parses a whole number of at least `min` for commander (a bad value is a usage error, exit 2). */
export function intArg(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    // Digits, or a whole number in exponent form (1e6).
    if (!/^\d+(\.\d+)?(e\+?\d+)?$/i.test(value.trim()) || !Number.isSafeInteger(n) || n < min) {
      throw new InvalidArgumentError(`expected a whole number of at least ${min}`);
    }
    return n;
  };
}

/**
 * Parses the id a command takes for commander: a UUID (every id of the service is one), so that an id
 * that cannot be one is a usage error (exit 2) and nothing is sent.
 *
 * @param what - whose id it is, for the error (`generation`, `file`)
 */
export function idArg(what: string): (value: string) => string {
  return (value) => {
    if (!isUuid(value.trim())) {
      throw new InvalidArgumentError(
        `expected a ${what} id: a UUID such as 0b0e6b8a-2f1c-4d5e-9a7b-3c2d1e0f4a5b`,
      );
    }
    return value.trim();
  };
}

/** The help of `--request-id`. */
export const REQUEST_ID_HELP = `X-Request-Id to send: ${REQUEST_ID_FORM.replace(/ \(.*\)$/, '')} (default: a fresh UUID, printed)`;

/**
 * Parses `--request-id` for commander: an id the service can echo (spec isRequestId), so that a value
 * that cannot be one — empty, with a line break or a space, too long — is a usage error (exit 2) naming
 * the flag and the form, and nothing is sent: no fresh id in its place, no refusal by the HTTP layer.
 *
 * @param command - the command whose help the error points to (`genpipe generate`)
 * @throws UsageError `--request-id '' is not a request id: 1 to 200 visible ASCII characters (…)`
 */
export function requestIdArg(command: string): (value: string) => string {
  return (value) => {
    if (!isRequestId(value)) {
      throw new UsageError(`--request-id '${value}' is not a request id: ${REQUEST_ID_FORM}`, {
        helpOf: command,
      });
    }
    return value;
  };
}

/** The longest span a seconds flag takes by default: the longest timer Node has (about 24.8 days). */
export const MAX_FLAG_SECONDS = 2_147_483;

/** Parses a number of seconds of at least `min` and at most `max` for commander. */
export function secondsArg(min: number, max: number = MAX_FLAG_SECONDS): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`expected a number of seconds of at least ${min} and at most ${max}`);
    }
    return n;
  };
}

/** The longest --poll-interval taken, seconds (an hour between two reads of one job). */
export const MAX_POLL_INTERVAL_S = 3600;

/**
 * Adds --poll-interval (seconds, at least 1: the interface accepts polling every 1 to 5 s and
 * recommends 2 to 5, which is the default) to a command that waits.
 */
export function addPollOption(cmd: Command): Command {
  return cmd.option(
    '--poll-interval <seconds>',
    'first wait between two status reads of a file or a legacy generation, growing 1.5 times per read to 5 s (a generation: from 1 s); a value above 5 raises that ceiling (default 2; at least 1, at most 3600)',
    secondsArg(1, MAX_POLL_INTERVAL_S),
  );
}

/**
 * `--timeout` limits a wait: a command not asked to wait (`--wait`, or `--out` where that waits) would
 * accept it and do nothing with it, so it is refused before anything is sent.
 *
 * @param waits - the flags that make the command wait, as the message names them
 * @throws UsageError `--timeout needs --wait: it limits the wait`
 */
export function checkTimeoutWaits(flags: { timeout?: number }, waiting: boolean, waits: string): void {
  if (flags.timeout !== undefined && !waiting) {
    throw new UsageError(`--timeout needs ${waits}: it limits the wait`);
  }
}
