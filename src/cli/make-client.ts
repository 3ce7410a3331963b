/**
 * The client a command runs with: the connection from flags or the environment (service-config.ts),
 * the legacy base URL's default, the client's notes on stderr, Ctrl-C as an AbortSignal, a progress
 * line on a terminal, and one way to print results (--json on stdout, text for people otherwise) and
 * errors (print-error.ts). Nothing printed ever carries the API key or the legacy token.
 */
import { setFlagsFromString } from 'node:v8';
import { type Command, InvalidArgumentError } from 'commander';
import { type ClientOptions, createClient, type GenpipeClient } from '../client/index.ts';
import {
  createRedactor,
  formatBytes,
  printable,
  type Redact,
  redactDeep,
} from '../pipeline/progress/index.ts';
import { isRequestId, isUuid, LEGACY_BASE_PATH, REQUEST_ID_FORM } from '../spec/index.ts';
import { signalExit } from './exit-codes.ts';
import { Interrupted, printError } from './print-error.ts';
import {
  resolveServiceConfig,
  type ServiceConfig,
  type ServiceFlags,
  serviceFlagHelp,
} from './service-config.ts';
import { UsageError } from './usage-error.ts';

/** Flags every client command takes. */
export interface ClientFlags extends ServiceFlags {
  json?: boolean;
  quiet?: boolean;
  /** Seconds between status reads while waiting (see addPollOption). */
  pollInterval?: number;
}

/** The agents base URL's legacy surface, used when no legacy base URL is given. */
export function defaultLegacyBaseUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${LEGACY_BASE_PATH}`;
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

let wasmTierUpOff = false;

/**
 * undici parses HTTP with llhttp compiled to WebAssembly, and V8's optimizing tier-up of that module
 * costs every CLI process a transient ~35 MB of RSS at its first request (measured: peak RSS of one
 * undici request 97 MB with it, 62 MB without). V8's baseline (Liftoff) code is plenty for the few
 * small answers a command parses, so the CLI turns tier-up off before its first request. Harmless
 * when the module was compiled already: it then keeps what it has.
 */
function keepWasmBaselineOnly(): void {
  if (wasmTierUpOff) return;
  wasmTierUpOff = true;
  setFlagsFromString('--liftoff-only');
}

/** A client made from flags and the environment, with what it needs to stay quiet about. */
export interface MadeClient {
  client: GenpipeClient;
  config: ServiceConfig;
  /** The API key and the legacy token: never printed. */
  secrets: string[];
}

/**
 * Makes a client from the connection flags, then the environment (GENPIPE_API_KEY, GENPIPE_BASE_URL,
 * GENPIPE_LEGACY_BASE_URL, GENPIPE_LEGACY_TOKEN). The legacy base URL defaults to
 * `<base-url>/dream-machine/v1` and the legacy token to the API key.
 *
 * @param flags - the command's connection flags
 * @param options - further client options (hooks, polling, rate window...)
 * @param env - the environment to read (default process.env)
 * @throws UsageError when the key or the URL is missing or malformed (never showing the key)
 * @example const { client } = makeClient({ baseUrl: 'http://127.0.0.1:4010' }); // key from the env
 */
export function makeClient(
  flags: ServiceFlags,
  options: Partial<ClientOptions> = {},
  env: NodeJS.ProcessEnv = process.env,
): MadeClient {
  const config = resolveServiceConfig(flags, env);
  keepWasmBaselineOnly();
  const secrets = [config.apiKey, ...(config.legacyToken ? [config.legacyToken] : [])];
  let client: GenpipeClient;
  try {
    client = createClient({
      apiKey: config.apiKey,
      baseUrl: config.baseUrl,
      legacyBaseUrl: config.legacyBaseUrl ?? defaultLegacyBaseUrl(config.baseUrl),
      ...(config.legacyToken ? { legacyToken: config.legacyToken } : {}),
      userAgent: 'genpipe-cli/0.1',
      ...options,
    });
  } catch (err) {
    if (err instanceof TypeError) throw new UsageError(`${err.message} (check the connection flags)`);
    throw err;
  }
  return { client, config, secrets };
}

/** A line of progress on a terminal (rewritten in place), or nothing when stderr is not a terminal. */
export interface ProgressLine {
  update(done: number, total: number | null): void;
  /** Ends the line (prints its final state once). */
  end(): void;
}

/** What a command's body gets. */
export interface CommandContext {
  client: GenpipeClient;
  config: ServiceConfig;
  /** Aborted by SIGINT (Ctrl-C) or SIGTERM (the command then ends with exit code 130 or 143). */
  signal: AbortSignal;
  /** What to tell the person if a signal interrupts the command from now on (replaces the last one). */
  ifInterrupted(note: string): void;
  json: boolean;
  /** Poll settings of waits, from --poll-interval. */
  pollIntervalMs: number | undefined;
  /** Scrubs secrets from a text. */
  redact: Redact;
  /** A note for a person on stderr (not with --quiet). */
  note(text: string): void;
  /** Prints the result: `value` as JSON on stdout with --json, else the lines of `human()`. */
  result(value: unknown, human: () => string[]): void;
  /** A progress line labelled `label` on stderr when it is a terminal (not with --quiet). */
  progress(label: string): ProgressLine;
}

const PROGRESS_EVERY_MS = 100;

/**
 * Runs a command's body with a client: makes the client, aborts on Ctrl-C, prints any error with
 * printError (sets process.exitCode: 1 a failed call, 2 a usage error, 130 interrupted), and closes
 * the client.
 *
 * @param flags - the command's options (connection flags, --json, --quiet, --poll-interval)
 * @param body - the command's work
 * @param options - further client options
 */
export async function runWithClient(
  flags: ClientFlags,
  body: (ctx: CommandContext) => Promise<void>,
  options: Partial<ClientOptions> = {},
): Promise<void> {
  const json = flags.json === true;
  const quiet = flags.quiet === true;
  let redact: Redact = createRedactor([flags.apiKey, flags.legacyToken]);
  const tty = process.stderr.isTTY === true && !quiet;
  let lineOpen = false;
  const note = (text: string) => {
    if (quiet) return;
    if (lineOpen) {
      process.stderr.write('\n');
      lineOpen = false;
    }
    process.stderr.write(`genpipe: ${printable(redact(text))}\n`);
  };
  const controller = new AbortController();
  let received: 'SIGINT' | 'SIGTERM' | null = null;
  let interruptNote: string | null = null;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    received ??= signal;
    controller.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let made: MadeClient | null = null;
  try {
    const pollIntervalMs =
      flags.pollInterval === undefined ? undefined : Math.round(flags.pollInterval * 1000);
    made = makeClient(flags, {
      hooks: { log: note },
      ...(pollIntervalMs !== undefined ? { polling: { intervalMs: pollIntervalMs } } : {}),
      ...options,
    });
    redact = createRedactor(made.secrets);
    const ctx: CommandContext = {
      client: made.client,
      config: made.config,
      signal: controller.signal,
      ifInterrupted(text) {
        interruptNote = text;
      },
      json,
      pollIntervalMs,
      redact,
      note,
      result(value, human) {
        if (json) {
          process.stdout.write(`${JSON.stringify(redactDeep(value, redact), null, 2)}\n`);
        } else {
          for (const line of human()) process.stdout.write(`${printable(redact(line))}\n`);
        }
      },
      progress(label) {
        if (!tty) return { update() {}, end() {} };
        let last = 0;
        const started = Date.now();
        const render = (done: number, total: number | null) => {
          const secs = Math.max(0.001, (Date.now() - started) / 1000);
          const pct = total ? ` ${Math.floor((done / total) * 100)}%` : '';
          const of = total !== null ? ` of ${formatBytes(total)}` : '';
          const shown = `${printable(redact(label))}${pct} (${formatBytes(done)}${of}, ${formatBytes(Math.round(done / secs))}/s)`;
          process.stderr.write(`\r\x1b[K${shown}`);
          lineOpen = true;
        };
        return {
          update(done, total) {
            const now = Date.now();
            if (now - last < PROGRESS_EVERY_MS && done !== total) return;
            last = now;
            render(done, total);
          },
          end() {
            if (lineOpen) process.stderr.write('\n');
            lineOpen = false;
          },
        };
      },
    };
    await body(ctx);
  } catch (err) {
    if (lineOpen) process.stderr.write('\n');
    lineOpen = false;
    const shown =
      received !== null && controller.signal.aborted
        ? new Interrupted(received, interruptNote !== null ? [interruptNote] : [])
        : err;
    process.exitCode = signalExit(
      printError(shown, { json, secrets: made?.secrets ?? [flags.apiKey, flags.legacyToken] }),
      received,
    );
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await made?.client.close();
  }
}
