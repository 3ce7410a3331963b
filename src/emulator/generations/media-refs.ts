/**
 * Resolving the media references of a create request to local files, one site at a time and in
 * request order: url (fetched from allowed hosts only), data (base64 decoded to a file), file_id (the
 * caller's ready file) and generation_id (the caller's completed generation of the right kind).
 * Also learns the facts (bytes, frame size, duration, real MIME type) the 413 and duration checks need.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isMediaError, probeVideo, readImageHeader, readImageSize, sniffFile } from '../../media/index.ts';
import {
  CHOICES,
  type FailureCode,
  fetchFailedDetail,
  fetchProxyUnavailableDetail,
  fileNotFoundDetail,
  fileNotReadyDetail,
  fileWrongKindDetail,
  generationRefNotCompletedDetail,
  generationRefNotFoundDetail,
  generationRefWrongKindDetail,
  type ImageRef,
  imageTooLargeDetail,
  imageTooManyPixelsDetail,
  invalidBase64Detail,
  LIMITS,
  type MediaFacts,
  type MediaPosition,
  type MediaRefSite,
  notAnImageDetail,
  notAVideoDetail,
  urlVideoTooLargeDetail,
} from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { FetchMediaError, fetchToFile } from '../fetch-media.ts';
import { HttpError } from '../http-error.ts';
import type { ClientRec } from '../store.ts';
import { decodeBase64ToFile } from './base64-file.ts';

export type MediaKind = 'image' | 'video';

/** A media reference resolved to a local file. */
export interface ResolvedMedia {
  /** Detail path of the site: source, image_ref[1], video.start_frame, ... */
  path: string;
  position: MediaPosition;
  channel: 'url' | 'data' | 'file_id' | 'generation_id';
  /** Local file holding the bytes (a generation's output file for generation_id). */
  filePath: string;
  kind: MediaKind;
  /** For the 413 and duration checks; absent for generation_id (no bytes are transported). */
  facts?: MediaFacts;
  /**
   * A failure found at submit time that the service reports asynchronously: bytes of the right kind whose
   * header does not decode (corrupt_input), or a file_id image over the size limits (image_too_large).
   */
  lateFailure?: { code: FailureCode; reason: string };
  /** Set for generation_id references. */
  generationId?: string;
}

/** Bytes a url reference may carry at most: 50 MB for images, CHOICES.urlVideoMaxBytes for a source video. */
function fetchCap(kind: MediaKind): number {
  return kind === 'image' ? LIMITS.imageMaxBytes : CHOICES.urlVideoMaxBytes;
}

/** The kind of media a site needs. Extend frames (video.start_frame / end_frame by generation_id) need a video. */
export function kindNeeded(site: MediaRefSite): MediaKind {
  if (site.position === 'video_source') return 'video';
  if (site.ref.generation_id && (site.path === 'video.start_frame' || site.path === 'video.end_frame')) {
    return 'video';
  }
  return 'image';
}

/** An image file over 50 MB or 8000 px a side: no 413 for file_id, the generation fails with image_too_large. */
function oversizeImage(path: string, facts: MediaFacts): ResolvedMedia['lateFailure'] {
  if (facts.bytes > LIMITS.imageMaxBytes)
    return { code: 'image_too_large', reason: imageTooLargeDetail(path) };
  const { width = 0, height = 0 } = facts;
  if (overSide({ width, height })) {
    return { code: 'image_too_large', reason: imageTooManyPixelsDetail(path, width, height) };
  }
  return undefined;
}

/** Whether an image has a side over 8000 px. */
export function overSide(size: { width: number; height: number }): boolean {
  return size.width > LIMITS.imageMaxSide || size.height > LIMITS.imageMaxSide;
}

function notMediaDetail(path: string, kind: MediaKind): string {
  return kind === 'image' ? notAnImageDetail(path) : notAVideoDetail(path);
}

function channelOf(ref: ImageRef): ResolvedMedia['channel'] {
  if (typeof ref.file_id === 'string') return 'file_id';
  if (typeof ref.generation_id === 'string') return 'generation_id';
  if (typeof ref.data === 'string') return 'data';
  return 'url';
}

/** Sniffs bytes on disk, checks their kind and reads their facts. */
async function inspect(path: string, filePath: string, bytes: number, kind: MediaKind) {
  const sniffed = await sniffFile(filePath).catch(() => null);
  if (!sniffed || sniffed.kind !== kind) {
    throw new HttpError(422, notMediaDetail(path, kind));
  }
  const facts: MediaFacts = { bytes, mime: sniffed.mime };
  let lateFailure: ResolvedMedia['lateFailure'];
  try {
    // A header claiming a side over the limit is taken at its word (no decoder reads 60000 px a side):
    // the 413 follows from it.
    const claimed = kind === 'image' ? await readImageSize(filePath) : null;
    const h =
      claimed && overSide(claimed) ? claimed : kind === 'image' ? await readImageHeader(filePath) : null;
    if (h) {
      facts.width = h.width;
      facts.height = h.height;
    } else {
      const p = await probeVideo(filePath);
      facts.width = p.width;
      facts.height = p.height;
      facts.durationSeconds = p.durationSeconds;
    }
  } catch (err) {
    const why = isMediaError(err) ? err.message : `${kind} could not be decoded`;
    lateFailure = { code: 'corrupt_input', reason: `${path}: ${why}` };
  }
  return { facts, lateFailure };
}

async function resolveUrl(
  ctx: EmulatorContext,
  site: MediaRefSite,
  url: string,
  dest: string,
  kind: MediaKind,
  signal?: AbortSignal,
): Promise<ResolvedMedia> {
  if (ctx.rng.chance(ctx.config.faults.fetch_proxy_down)) {
    throw new HttpError(502, fetchProxyUnavailableDetail(site.path));
  }
  let fetched: Awaited<ReturnType<typeof fetchToFile>>;
  try {
    fetched = await fetchToFile(ctx, url, dest, { maxBytes: fetchCap(kind), accept: kind, signal });
  } catch (err) {
    if (!(err instanceof FetchMediaError)) throw err;
    switch (err.kind) {
      case 'too_large':
        throw new HttpError(
          413,
          kind === 'image' ? imageTooLargeDetail(site.path) : urlVideoTooLargeDetail(site.path),
        );
      case 'http':
        throw new HttpError(422, fetchFailedDetail(site.path, err.httpStatus));
      case 'not_media':
        throw new HttpError(422, notMediaDetail(site.path, kind));
      default:
        // not_allowed and unreachable read the same to the caller: the URL could not be fetched.
        throw new HttpError(422, fetchFailedDetail(site.path));
    }
  }
  const { facts, lateFailure } = await inspect(site.path, dest, fetched.bytes, kind);
  return {
    path: site.path,
    position: site.position,
    channel: 'url',
    filePath: dest,
    kind,
    facts,
    lateFailure,
  };
}

async function resolveData(
  site: MediaRefSite,
  data: string,
  dest: string,
  kind: MediaKind,
): Promise<ResolvedMedia> {
  const bytes = await decodeBase64ToFile(data, dest);
  if (bytes === null) throw new HttpError(422, invalidBase64Detail(site.path));
  const { facts, lateFailure } = await inspect(site.path, dest, bytes, kind);
  return {
    path: site.path,
    position: site.position,
    channel: 'data',
    filePath: dest,
    kind,
    facts,
    lateFailure,
  };
}

function resolveFile(
  ctx: EmulatorContext,
  client: ClientRec,
  site: MediaRefSite,
  fileId: string,
  kind: MediaKind,
): ResolvedMedia {
  const file = ctx.store.files.get(fileId);
  const now = ctx.clock.now();
  if (!file || file.clientId !== client.id || (file.expiresAt !== null && file.expiresAt <= now)) {
    throw new HttpError(422, fileNotFoundDetail(site.path, fileId));
  }
  if (file.state !== 'ready' || file.deletedAt !== null || !file.blobPath) {
    throw new HttpError(422, fileNotReadyDetail(site.path, fileId, file.state));
  }
  const mediaKind = file.media?.kind ?? 'other';
  if (mediaKind !== kind) throw new HttpError(422, fileWrongKindDetail(site.path, fileId, mediaKind, kind));
  const facts: MediaFacts = { bytes: file.size_bytes, mime: file.media?.mime ?? file.mime_type };
  if (file.media?.width !== undefined) facts.width = file.media.width;
  if (file.media?.height !== undefined) facts.height = file.media.height;
  if (file.media?.durationSeconds !== undefined) facts.durationSeconds = file.media.durationSeconds;
  return {
    path: site.path,
    position: site.position,
    channel: 'file_id',
    filePath: file.blobPath,
    kind,
    facts,
    lateFailure: kind === 'image' ? oversizeImage(site.path, facts) : undefined,
  };
}

function resolveGeneration(
  ctx: EmulatorContext,
  client: ClientRec,
  site: MediaRefSite,
  generationId: string,
  kind: MediaKind,
): ResolvedMedia {
  const gen = ctx.store.generations.get(generationId);
  if (gen?.surface !== 'agents' || gen.clientId !== client.id) {
    throw new HttpError(422, generationRefNotFoundDetail(site.path, generationId));
  }
  if (gen.state !== 'completed') {
    throw new HttpError(422, generationRefNotCompletedDetail(site.path, generationId, gen.state));
  }
  const output = gen.outputs.find((o) => o.mime.startsWith(`${kind}/`));
  if (!output)
    throw new HttpError(422, generationRefWrongKindDetail(site.path, generationId, gen.type, kind));
  return {
    path: site.path,
    position: site.position,
    channel: 'generation_id',
    filePath: output.blobPath,
    kind,
    generationId,
  };
}

/**
 * Resolves every media reference site of a validated request, in order; the first failure wins.
 * Bytes of url and data references are written under `dir` (created here; the caller removes it).
 * @throws HttpError 413 / 422 / 502 with the interface's `<path>: ...` details
 */
export async function resolveMediaRefs(
  ctx: EmulatorContext,
  client: ClientRec,
  sites: readonly MediaRefSite[],
  dir: string,
  signal?: AbortSignal,
): Promise<ResolvedMedia[]> {
  const out: ResolvedMedia[] = [];
  let made = false;
  for (const [i, site] of sites.entries()) {
    const kind = kindNeeded(site);
    const { ref } = site;
    const channel = channelOf(ref);
    if (channel === 'file_id') {
      out.push(resolveFile(ctx, client, site, ref.file_id as string, kind));
    } else if (channel === 'generation_id') {
      out.push(resolveGeneration(ctx, client, site, ref.generation_id as string, kind));
    } else {
      if (!made) {
        await mkdir(dir, { recursive: true });
        made = true;
      }
      const dest = join(dir, `ref-${i}.bin`);
      out.push(
        channel === 'data'
          ? await resolveData(site, ref.data as string, dest, kind)
          : await resolveUrl(ctx, site, ref.url ?? '', dest, kind, signal),
      );
    }
  }
  return out;
}

/** Facts of the resolved references keyed by path, for checkMediaFacts. */
export function factsByPath(media: readonly ResolvedMedia[]): Record<string, MediaFacts> {
  const facts: Record<string, MediaFacts> = {};
  for (const m of media) if (m.facts) facts[m.path] = m.facts;
  return facts;
}
