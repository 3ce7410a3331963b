/**
 * The client a command runs with: the connection from flags or the environment (service-config.ts),
 * the legacy base URL's default, the client's notes on stderr, Ctrl-C as an AbortSignal, a progress
 * line on a terminal, and one way to print results (--json on stdout, text for people otherwise) and
 * errors (print-error.ts). Nothing printed ever carries the API key or the legacy token.
 */
import { setFlagsFromString } from 'node:v8';
import { type ClientOptions, createClient, type GenpipeClient } from '../client/index.ts';
import {
  createRedactor,
  formatBytes,
  printable,
  type Redact,
  redactDeep,
} from '../pipeline/progress/index.ts';
import { LEGACY_BASE_PATH } from '../spec/index.ts';
import type { ClientFlags } from './command-flags.ts';
import { signalExit } from './exit-codes.ts';
import { pollIntervalMsOf } from './flag-groups/polling.ts';
import { Interrupted, printError } from './print-error.ts';
import { resolveServiceConfig, type ServiceConfig, type ServiceFlags } from './service-config.ts';
import { UsageError } from './usage-error.ts';

// The flags and their parsers, kept with the commands' definitions (light: no client loaded).
export {
  addPollOption,
  addServiceOptions,
  type ClientFlags,
  checkTimeoutWaits,
  idArg,
  intArg,
  MAX_FLAG_SECONDS,
  MAX_POLL_INTERVAL_S,
  type OutputHelp,
  REQUEST_ID_HELP,
  requestIdArg,
  secondsArg,
} from './command-flags.ts';

/** The agents base URL's legacy surface, used when no legacy base URL is given. */
export function defaultLegacyBaseUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${LEGACY_BASE_PATH}`;
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
    // --poll-interval as on every command: the longest wait between two reads (the client's own
    // settings do the rest: the first wait, its growth).
    const pollIntervalMs = pollIntervalMsOf(flags);
    made = makeClient(flags, {
      hooks: { log: note },
      ...(pollIntervalMs !== undefined ? { polling: { maxIntervalMs: pollIntervalMs } } : {}),
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
