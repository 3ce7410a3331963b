/**
 * `--log-file`: a record of a long run on disk, whatever stdout shows. Every event as the plain lines of
 * `-v` give it (with an ISO time instead of the clock), every note (retries, 429 waits, the watch's
 * problems), the closing summary and the error a batch ended with, each line made printable and passed
 * through the batch's redactor. The file is appended to: each run starts with a separator line naming it.
 *
 * Lines are kept in memory and handed to the operating system in one write at the end of the event-loop
 * turn they were made in (or as soon as LOG_FLUSH_BYTES are waiting): no write per line at 100k items,
 * and a process killed with SIGKILL loses at most the lines of the turn it was killed in — what the
 * operating system holds survives the process. Nothing is fsynced: a power cut or a crash of the
 * operating system may lose what it had not written to disk yet.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { EventSink } from '../events.ts';
import { printable } from './format.ts';
import { plainLine } from './plain.ts';
import { type Redact, redactDeep, redactShapes } from './redact.ts';

/** Waiting lines are written at once when they reach this many bytes. */
export const LOG_FLUSH_BYTES = 64 * 1024;

/** What the first lines of a run in the log say. */
export interface LogRunHeader {
  /** genpipe's version. */
  version: string;
  command: 'run' | 'watch';
  /** The options as given (secrets redacted here again, whatever they hold). */
  options: Record<string, unknown>;
}

export interface LogFileOptions {
  /** Masks the secrets the batch knows; a later setRedact replaces it (once the service is connected). */
  redact?: Redact;
  /** Called once when a write fails (disk full, ...): the log stops, the batch goes on. */
  onWriteError?: (err: Error) => void;
  /** Clock, for tests. */
  now?: () => number;
}

export interface LogFile {
  readonly path: string;
  /** Every event of the batch, as `-v` plain lines with an ISO time. */
  readonly sink: EventSink;
  /** A line of text, prefixed with the time and `label: ` (e.g. `note`, `genpipe`, `error`). */
  line(label: string, text: string): void;
  /** Replaces the redactor (the service's secrets are known once it is connected). */
  setRedact(redact: Redact): void;
  /** Writes what is waiting now (before a hard exit). */
  flush(): void;
  /** Writes what is waiting and closes the file; later lines are dropped. */
  close(): void;
}

/** Why a log file cannot be opened, in words (the caller names the flag). */
export class LogFileOpenError extends Error {
  override name = 'LogFileOpenError';
  constructor(
    readonly path: string,
    readonly code: string | undefined,
    why: string,
  ) {
    super(`'${path}' cannot be opened for appending: ${why}`);
  }
}

function openWhy(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ENOENT':
      return 'its folder does not exist';
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a folder';
    case 'ENOTDIR':
      return 'a part of its path is not a folder';
    default:
      return err.message;
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Opens `path` for appending (created when missing) and writes the run's separator and options lines.
 *
 * @throws LogFileOpenError when the file cannot be opened (missing folder, permission, a folder)
 * @example const log = openLogFile('run.log', { redact }, { version, command: 'run', options });
 */
export function openLogFile(path: string, header: LogRunHeader, opts: LogFileOptions = {}): LogFile {
  let fd: number | null;
  try {
    fd = openSync(path, 'a');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new LogFileOpenError(path, e.code, openWhy(e));
  }
  const now = opts.now ?? Date.now;
  let redact = opts.redact ?? redactShapes;
  const clean = (s: string) => printable(redact(s));
  let waiting: string[] = [];
  let bytes = 0;
  let scheduled: NodeJS.Immediate | null = null;

  const flush = () => {
    if (scheduled) {
      clearImmediate(scheduled);
      scheduled = null;
    }
    if (fd === null || waiting.length === 0) return;
    const text = waiting.join('');
    waiting = [];
    bytes = 0;
    try {
      writeSync(fd, text);
    } catch (err) {
      const f = fd;
      fd = null;
      try {
        closeSync(f);
      } catch {
        // already unusable
      }
      opts.onWriteError?.(err as Error);
    }
  };

  const push = (line: string) => {
    if (fd === null) return;
    waiting.push(`${line}\n`);
    bytes += line.length + 1;
    if (bytes >= LOG_FLUSH_BYTES) flush();
    else if (!scheduled) {
      scheduled = setImmediate(flush);
      scheduled.unref();
    }
  };

  const started = now();
  const options = JSON.stringify(redactDeep(header.options, clean));
  push(`==== genpipe ${header.version} ${header.command}, started ${iso(started)}, pid ${process.pid} ====`);
  push(`[${iso(started)}] options: ${options}`);
  flush();

  return {
    path,
    sink: (event) => {
      const line = plainLine(event, {
        redact: (s) => redact(s),
        command: header.command,
        iso: true,
        ids: true,
      });
      if (line !== null) push(line);
    },
    line: (label, text) => push(`[${iso(now())}] ${label}: ${clean(text)}`),
    setRedact: (r) => {
      redact = r;
    },
    flush,
    close: () => {
      flush();
      if (fd !== null) {
        const f = fd;
        fd = null;
        try {
          closeSync(f);
        } catch {
          // nothing more to write
        }
      }
    },
  };
}
