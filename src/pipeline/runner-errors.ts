/**
 * Which errors end one file and which end the batch. A file's own problem (a 400/413/422 detail, a
 * failed ingest, a lost answer) fails that item; a problem no other file could escape stops the batch:
 * the key is refused (401), the client is suspended or deactivated (403), the balance is gone (402), or
 * the service stays unreachable after the client's retries (connection failures, timeouts, 502/503).
 */

import { resolve, sep } from 'node:path';
import {
  AuthenticationError,
  ConnectionError,
  GenpipeError,
  InsufficientBalanceError,
  LocalWriteError,
  PermissionError,
  TimeoutError,
  UpstreamError,
} from '../client/index.ts';
import { InputChangedError } from './input-changed.ts';
import { ItemTakenOverError } from './store/item-taken-over.ts';

/** The 403 details of a client that may not call the service at all (interface, Authentication). */
export const CLIENT_STATE_DETAILS: readonly string[] = [
  'API client is suspended',
  'API client is deactivated',
];

/**
 * `label: message`, said once: a message that already starts with the label's words (the client's
 * summary of the status, e.g. "Authentication failed: Invalid API key") is given as it is, the
 * service's text untouched.
 */
function saidOnce(label: string, message: string): string {
  return message.toLowerCase().startsWith(label.toLowerCase()) ? message : `${label}: ${message}`;
}

/** Why a batch stops early, as one line; null when `err` is not a batch-stopping error. */
export function batchStopReason(err: unknown): string | null {
  if (err instanceof AuthenticationError) return saidOnce('authentication failed', err.message);
  if (err instanceof PermissionError && err.detail !== null && CLIENT_STATE_DETAILS.includes(err.detail)) {
    return `the API client may not call the service: ${err.message}`;
  }
  if (err instanceof InsufficientBalanceError) return saidOnce('insufficient balance', err.message);
  if (err instanceof UpstreamError) return `service unavailable after retries: ${err.message}`;
  if (err instanceof ConnectionError || err instanceof TimeoutError) {
    return `service unreachable after retries: ${err.message}`;
  }
  return null;
}

/** True when `err` stops the whole batch (see batchStopReason). */
export function isBatchStopping(err: unknown): boolean {
  return batchStopReason(err) !== null;
}

/** True when `err` is a cancellation (the batch's signal aborted), not a failure. */
export function isAbort(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted && (err === signal.reason || err instanceof DOMException)) return true;
  return err instanceof Error && err.name === 'AbortError';
}

/**
 * `err` as a refused write in the out dir (a full disk, a quota, a read-only or forbidden place), which
 * stops the batch (StopControl.outDirFailed): a LocalWriteError (a download's), or a file system error
 * of those codes at a path inside `outDir` (a result.json, a composite); null for anything else (a
 * file of the input dir that cannot be read is that file's problem).
 */
export function outDirWriteError(err: unknown, outDir: string): LocalWriteError | null {
  if (err instanceof LocalWriteError) return err;
  const path = (err as NodeJS.ErrnoException | null)?.path;
  if (typeof path !== 'string') return null;
  const root = resolve(outDir);
  const at = resolve(path);
  if (at !== root && !at.startsWith(root.endsWith(sep) ? root : root + sep)) return null;
  return LocalWriteError.from(err);
}

/**
 * Errors a stage may not turn into an item failure: an abort, a batch-stopping error, a write the disk
 * refused (LocalWriteError: see outDirWriteError), or the item's
 * file found changed since its check (input-changed.ts), or the item taken over by another worker
 * (store/item-taken-over.ts). Stages call it in their catch blocks and
 * rethrow what it accepts; the runner decides.
 */
export function isRunnersToHandle(err: unknown, signal?: AbortSignal): boolean {
  return (
    isAbort(err, signal) ||
    isBatchStopping(err) ||
    err instanceof LocalWriteError ||
    err instanceof InputChangedError ||
    err instanceof ItemTakenOverError
  );
}

/**
 * A plain reason for an item from an error: the service's detail when it gave one (verbatim, as the
 * service words it), else the error's message. Client messages never hold a key or a signed query.
 */
export function reasonOf(err: unknown): string {
  if (err instanceof GenpipeError) return err.detail ?? err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
