/**
 * The flags of the commands that talk to the service, and the parsers of their values: what a command
 * is defined with, before it runs. Light on purpose — commander and the service's words only — so that
 * `genpipe <command> --help` does not load the client (make-client.ts runs a command's body with one).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { isRequestId, isUuid, REQUEST_ID_FORM } from '../spec/index.ts';
import { CONNECTION } from './flag-groups/connection.ts';
import { addFlagGroups } from './flag-groups/group.ts';
import { type OutputHelp, outputGroup } from './flag-groups/output.ts';
import { POLLING } from './flag-groups/polling.ts';
import type { ServiceFlags } from './service-config.ts';
import { UsageError } from './usage-error.ts';

export { intArg, MAX_FLAG_SECONDS, secondsArg } from './flag-groups/parsers.ts';
export { MAX_POLL_INTERVAL_S } from './flag-groups/polling.ts';

/** Flags every client command takes. */
export interface ClientFlags extends ServiceFlags {
  json?: boolean;
  quiet?: boolean;
  /** Seconds between two status reads of a job or file at most (the polling group's --poll-interval). */
  pollInterval?: number;
}

export type { OutputHelp };

/** Adds the connection flags (--api-key, --base-url, --legacy-base-url, --legacy-token), --json and --quiet. */
export function addServiceOptions(cmd: Command, output: OutputHelp = {}): Command {
  return addFlagGroups(cmd, [CONNECTION, outputGroup(output).only('--json', '--quiet')]);
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

/** Adds --poll-interval (the polling group's: one meaning on every command) to a command that waits. */
export function addPollOption(cmd: Command): Command {
  return addFlagGroups(cmd, [POLLING.only('--poll-interval')]);
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
