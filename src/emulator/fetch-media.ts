/**
 * STUB — fetching url media references for the emulator: only from allowed hosts, streamed to a file,
 * never buffered, with a byte cap. Used by generation media references and the legacy modify source.
 */
import type { EmulatorContext } from './context.ts';

export type FetchFailureKind = 'not_allowed' | 'unreachable' | 'http' | 'too_large' | 'not_media';

export class FetchMediaError extends Error {
  override name = 'FetchMediaError';
  constructor(
    readonly kind: FetchFailureKind,
    message: string,
    /** HTTP status of the remote answer, for kind 'http'. */
    readonly httpStatus?: number,
    /** Content-Type the remote gave, for kind 'not_media'. */
    readonly contentType?: string,
  ) {
    super(message);
  }
}

export interface FetchedMedia {
  path: string;
  bytes: number;
  /** Content-Type the remote gave (may be absent). */
  contentType: string | null;
}

/**
 * Streams `url` to `destPath`. Rejects with FetchMediaError: host not in config.fetch_allow_hosts,
 * connection failure, non-2xx status, more than `maxBytes`, or a Content-Type that is neither
 * image/* nor video/* (per `accept`).
 */
export async function fetchToFile(
  _ctx: EmulatorContext,
  _url: string,
  _destPath: string,
  _opts: { maxBytes: number; accept: 'image' | 'video' | 'media'; signal?: AbortSignal },
): Promise<FetchedMedia> {
  throw new Error('not implemented');
}
