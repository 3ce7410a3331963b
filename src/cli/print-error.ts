/**
 * Printing any error for a person (or, with --json, as one JSON line) and choosing the exit code.
 * Shared by every command: the detail, the HTTP status and the request id are always shown when the
 * error has them; secrets are scrubbed from everything printed.
 */
import { CommanderError } from 'commander';
import {
  FileFailedError,
  GenerationFailedError,
  GenpipeError,
  LostResponseError,
  PreflightError,
  RateLimitError,
} from '../client/errors.ts';
import { createRedactor, type Redact, redactDeep } from '../client/redact.ts';
import { printable } from '../pipeline/progress/format.ts';
import { isRecipeError } from '../pipeline/recipe-error.ts';
import { StoreConnectionError } from '../pipeline/store/postgres/store-errors.ts';
import { EXIT } from './exit-codes.ts';
import { LOCAL_CHECK_NOTE, LocalCheckError } from './local-check-error.ts';
import { snakeKeys } from './snake-keys.ts';
import { UsageError } from './usage-error.ts';

/**
 * A command interrupted by a signal, with what the person should know of the work it leaves (a
 * generation created, going on at the service). Its exit code is that of an interruption.
 */
export class Interrupted extends Error {
  override name = 'AbortError';
  constructor(
    readonly signal: 'SIGINT' | 'SIGTERM',
    readonly notes: readonly string[],
  ) {
    super(`interrupted (${signal})`);
  }
}

/** Options of printError. */
export interface PrintErrorOptions {
  /** Print `{"error": {...}}` (the error's toJSON() plus its class's own facts) instead of text. */
  json?: boolean;
  /** Where to print (default process.stderr). */
  stream?: { write(text: string): unknown };
  /** Texts never to print (API keys, tokens); anything shaped like a key is masked too. */
  secrets?: ReadonlyArray<string | null | undefined>;
  /** First word of a text line (default `genpipe`). */
  prefix?: string;
}

/**
 * The emulator's published default key (DEFAULT_KEY of src/emulator/config.ts, printed by `genpipe
 * serve` and quoted by service-config's set-up hint). Written here rather than imported, so that no
 * command but `serve` loads the emulator; test/cli/files.test.ts checks that the two agree.
 */
export const EMULATOR_DEFAULT_KEY = 'svc-api-emulator-default-key';

/**
 * A redactor of the given secrets and of anything shaped like a key — except the emulator's published
 * default key (printed by `genpipe serve` and quoted in the set-up hint), unless it is in use.
 */
function redactorFor(secrets: ReadonlyArray<string | null | undefined>): Redact {
  return createRedactor(secrets, { keep: [EMULATOR_DEFAULT_KEY] });
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

/**
 * The exit code an error ends a command with: 2 for usage errors (UsageError, commander's parse
 * errors), 130 for an interruption (an AbortError), 0 for commander's --help/--version, else 1.
 *
 * @example exitCodeOf(new UsageError('--limit expects a number')) // 2
 */
export function exitCodeOf(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  if (err instanceof UsageError) return EXIT.usage;
  if (isAbort(err)) return EXIT.interrupted;
  // The store cannot be reached, refused the login, or failed a write: nothing more can be recorded.
  if (err instanceof StoreConnectionError) return EXIT.stoppedEarly;
  return EXIT.failed;
}

/**
 * The facts of an error as a plain object: toJSON() of client errors plus what their class adds, its
 * keys in snake_case as in every JSON document genpipe prints (docs/schemas/error.schema.json).
 */
export function errorFacts(err: unknown): Record<string, unknown> {
  if (err instanceof GenpipeError) {
    const facts: Record<string, unknown> = { ...err.toJSON() };
    if (err instanceof GenerationFailedError) {
      facts.generationId = err.generationId;
      facts.failureCode = err.failureCode;
      facts.failureReason = err.failureReason;
    } else if (err instanceof LostResponseError) {
      facts.mayExist = err.mayExist;
    } else if (err instanceof RateLimitError) {
      facts.kind = err.kind;
      facts.limit = err.limit;
    } else if (err instanceof FileFailedError) {
      facts.fileId = err.fileId;
      facts.failureReason = err.failureReason;
    }
    return snakeKeys(facts);
  }
  if (err instanceof UsageError) return { name: err.name, code: 'GENPIPE_USAGE', message: err.message };
  if (err instanceof LocalCheckError) {
    return { name: err.name, code: err.code, message: err.message, file: err.subject, reason: err.reason };
  }
  if (err instanceof Interrupted) {
    return {
      name: 'AbortError',
      code: 'GENPIPE_INTERRUPTED',
      message: err.message,
      signal: err.signal,
      notes: err.notes,
    };
  }
  if (isAbort(err)) return { name: 'AbortError', code: 'GENPIPE_INTERRUPTED', message: 'interrupted' };
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { name: err.name, ...(typeof code === 'string' ? { code } : {}), message: err.message };
  }
  return { name: 'Error', message: String(err) };
}

/**
 * The lines a person reads for an error (without the prefix). Only the lines genpipe composes as lines
 * are lines: a message is one line, whatever it holds (each line is made printable when printed).
 */
function humanLines(err: unknown): string[] {
  if (err instanceof GenerationFailedError) {
    const lines = [err.message];
    if (err.failureCode) {
      lines.push(
        `  failure_code: ${err.failureCode} (${err.retryable ? 'retryable: the same request may succeed' : 'not retryable'})`,
      );
    }
    lines.push(`  failure_reason: ${err.failureReason ?? '(none given)'}`);
    return lines;
  }
  if (err instanceof LostResponseError) {
    return [
      err.message,
      `  request id: ${err.requestId}`,
      '  the job may exist: do not simply run the command again, or it may be created (and paid) twice',
    ];
  }
  if (err instanceof GenpipeError) {
    const lines = [err.message];
    if (err instanceof PreflightError) lines.push('  checked locally: nothing was sent to the service');
    if (err instanceof RateLimitError) {
      const wait = err.retryAfterMs !== null ? `; retry after ${Math.ceil(err.retryAfterMs / 1000)} s` : '';
      lines.push(`  rate limit: ${err.kind}${wait}`);
    }
    return lines;
  }
  if (err instanceof LocalCheckError) return [err.message, `  ${LOCAL_CHECK_NOTE}`];
  if (err instanceof UsageError && err.helpOf !== null)
    return [...err.lines, `Run '${err.helpOf} --help' for usage.`];
  if (err instanceof UsageError || isRecipeError(err)) return [...err.lines];
  if (err instanceof Interrupted) return [err.message, ...err.notes.map((n) => `  ${n}`)];
  if (isAbort(err)) return ['interrupted'];
  if (err instanceof Error) return [err.message];
  return [String(err)];
}

/**
 * Prints an error for a person on stderr — its message (which carries the detail, the HTTP status and
 * the request id), plus the failure_code and failure_reason of a failed generation and the request id
 * of a lost create — or, with `json`, one line `{"error": {...}}`. Returns the exit code to end with.
 * Commander's own parse errors are already printed by commander: nothing more is printed for them.
 *
 * @param err - anything thrown
 * @param options - json, stream, secrets, prefix
 * @returns the exit code (see exitCodeOf)
 * @example process.exitCode = printError(err, { json: opts.json, secrets: [apiKey] });
 */
export function printError(err: unknown, options: PrintErrorOptions = {}): number {
  const code = exitCodeOf(err);
  if (err instanceof CommanderError) return code;
  const stream = options.stream ?? process.stderr;
  const redact = redactorFor(options.secrets ?? []);
  if (options.json) {
    stream.write(`${JSON.stringify({ error: redactDeep(errorFacts(err), redact) })}\n`);
    return code;
  }
  const prefix = options.prefix ?? 'genpipe';
  const [first = '', ...rest] = humanLines(err).map((line) => printable(redact(line)));
  stream.write(`${prefix}: ${first}\n${rest.map((line) => `${line}\n`).join('')}`);
  return code;
}
