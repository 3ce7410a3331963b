/**
 * The legacy calls beyond modify: each create checked locally by its src/spec validator (a
 * PreflightError with the detail the service would answer, nothing sent), then posted to its path
 * (LEGACY_PATHS) with the create retry rules (no resend after a lost answer); the reads and delete
 * with the idempotent ones.
 */
import { randomUUID } from 'node:crypto';
import {
  LEGACY_OPERATION_CHOICES as C,
  LEGACY_CREATES,
  LEGACY_PATHS,
  type LegacyCreateKind,
  type LegacyGeneration,
} from '../../spec/index.ts';
import type { ApiTransport } from '../api-transport.ts';
import { PreflightError } from '../errors.ts';
import { redact } from '../redact.ts';
import type { LegacyCreateOptions, LegacyCredits, LegacyGenerationList } from './inputs.ts';

/** `path` with `:id` replaced by the encoded id. */
function withId(path: string, id: string | undefined): string {
  return id === undefined ? path : path.replace(':id', encodeURIComponent(id));
}

/**
 * Checks a legacy create locally, without sending it.
 * @param secrets - texts never to quote back
 * @returns the request with the service's defaults applied (for information; the original is sent)
 * @throws PreflightError 400 with the service's detail
 * @example preflightLegacy('image', { format: 'gif' }) // throws 400 "Expected one of: jpg, png for format ..."
 */
export function preflightLegacy(
  kind: LegacyCreateKind,
  body: unknown,
  secrets: readonly string[] = [],
): Record<string, unknown> {
  const checked = LEGACY_CREATES[kind].validate(body);
  if (!checked.ok) throw new PreflightError(checked.status, redact(checked.detail, secrets));
  return checked.request;
}

/**
 * How long an attempt of a create may wait for its answer: a sync image is answered only when done or
 * after its sync_timeout (clipped to the longest the service accepts), so that wait comes on top of the
 * client's time limit; undefined for every other create (the client's limit).
 */
function answerTimeout(transport: ApiTransport, request: Record<string, unknown>): number | undefined {
  if (request.sync !== true) return undefined;
  const asked = typeof request.sync_timeout === 'number' ? request.sync_timeout : C.syncTimeoutDefaultSeconds;
  return transport.settings.timeoutMs + Math.min(asked, C.syncTimeoutMaxSeconds) * 1000;
}

/** Checks, then posts a legacy create; `id` is the source generation of an upscale or add-audio. */
export async function createLegacy(
  transport: ApiTransport,
  kind: LegacyCreateKind,
  body: unknown,
  options: LegacyCreateOptions & { id?: string },
): Promise<LegacyGeneration> {
  const request = preflightLegacy(kind, body, transport.secrets);
  const timeoutMs = answerTimeout(transport, request);
  const { body: generation } = await transport.json<LegacyGeneration>({
    surface: 'legacy',
    method: 'POST',
    path: withId(LEGACY_CREATES[kind].path, options.id),
    json: body ?? {},
    retryClass: 'create',
    requestId: options.requestId ?? randomUUID(),
    signal: options.signal,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
  return generation;
}

/** One GET of the legacy surface. */
async function read<T>(
  transport: ApiTransport,
  path: string,
  options: { signal?: AbortSignal; query?: Record<string, number | undefined> },
): Promise<T> {
  const { body } = await transport.json<T>({
    surface: 'legacy',
    method: 'GET',
    path,
    ...(options.query ? { query: options.query } : {}),
    signal: options.signal,
  });
  return body;
}

/** One page of the caller's legacy generations, newest first (limit 1..100, default 10; offset ≥ 0). */
export function listLegacy(
  transport: ApiTransport,
  options: { limit?: number; offset?: number; signal?: AbortSignal },
): Promise<LegacyGenerationList> {
  const { signal, ...query } = options;
  return read(transport, LEGACY_PATHS.list, { signal, query });
}

/** Deletes a legacy generation and its outputs (204). @throws NotFoundError */
export async function deleteLegacy(
  transport: ApiTransport,
  id: string,
  options: { signal?: AbortSignal },
): Promise<void> {
  await transport.json<null>({
    surface: 'legacy',
    method: 'DELETE',
    path: withId(LEGACY_PATHS.delete, id),
    retryClass: 'idempotent',
    signal: options.signal,
  });
}

export const legacyReads = {
  concepts: (t: ApiTransport, o: { signal?: AbortSignal }) => read<string[]>(t, LEGACY_PATHS.concepts, o),
  credits: (t: ApiTransport, o: { signal?: AbortSignal }) => read<LegacyCredits>(t, LEGACY_PATHS.credits, o),
  ping: (t: ApiTransport, o: { signal?: AbortSignal }) => read<{ message: string }>(t, LEGACY_PATHS.ping, o),
};
