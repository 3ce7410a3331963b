/**
 * Small thumbnails for report.html, made with sharp (images) and ffmpeg (a poster frame of videos) into
 * `<out>/.thumbs/`, and referenced relatively from the report. A thumbnail is named after its source's
 * file identity (device and inode: hard links share one), size and mtime, so refreshing the report during a batch reuses the ones already made; the
 * process also remembers them, so a refresh over thousands of files only stats each source instead of
 * opening it again. A source that cannot be thumbnailed (undecodable, truncated, not media) simply has
 * none: the report shows a placeholder. Past the report's first page an output image a browser draws
 * itself is shown as it is rather than thumbnailed (MakeThumbnailsOptions): a reader may never page
 * that far, and a thumbnail made for every file cost about as much CPU as the rest of the file's work.
 */

import { createHash, randomUUID } from 'node:crypto';
import { type Stats, statSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import pLimit from 'p-limit';
import sharp from 'sharp';
import { probeVideo, runFfmpeg } from '../../media/index.ts';
import { isChain } from '../chain.ts';
import { currentStep, type Item } from '../item.ts';
import { THUMBS_DIR } from './out-dir-names.ts';

export { THUMBS_DIR } from './out-dir-names.ts';
/** Longest side of a thumbnail, in px (about twice its displayed size, for sharp screens). */
export const THUMB_MAX_SIDE = 240;
/** Thumbnails made at once (libvips and ffmpeg each use a core). */
export const THUMB_CONCURRENCY = 2;

const IMAGE_EXTS = new Set([
  '.png',
  '.jpg',
  '.jpeg',
  '.webp',
  '.gif',
  '.avif',
  '.heic',
  '.heif',
  '.tif',
  '.tiff',
]);
const VIDEO_EXTS = new Set(['.mp4', '.mov', '.m4v', '.webm', '.mkv', '.avi']);
/** Images every browser draws itself (not HEIC or TIFF). */
const BROWSER_IMAGE_EXTS = new Set(['.png', '.jpg', '.jpeg', '.webp', '.gif', '.avif']);

/** Sources opened to make a thumbnail, by this process (for tests and the benches). */
export const thumbnailCounts = { opened: 0 };

/** What a file can be thumbnailed as, judged from its name. */
export function thumbKindOfName(name: string): 'image' | 'video' | null {
  const ext = extname(name).toLowerCase();
  if (IMAGE_EXTS.has(ext)) return 'image';
  if (VIDEO_EXTS.has(ext)) return 'video';
  return null;
}

/**
 * Thumbnails made or found by this process, by thumbnail folder: cache key → the file's extension (its
 * name is `<key>.<ext>`), or null when looked for and not there (foundOnDisk), so that a refresh of the
 * report (every second of a watch, over 10,000 files or more) only stats each source. Kept small: one
 * short key per thumbnail.
 */
const madeIn = new Map<string, Map<string, 'jpg' | 'png' | null>>();

/** The name of the thumbnail made or found by this process for `key` in `thumbsDir`, if any. */
function madeName(thumbsDir: string, key: string): string | undefined {
  const ext = madeIn.get(thumbsDir)?.get(key);
  return ext ? `${key}.${ext}` : undefined;
}

function remember(thumbsDir: string, key: string, ext: 'jpg' | 'png' | null): void {
  let made = madeIn.get(thumbsDir);
  if (!made) {
    made = new Map();
    madeIn.set(thumbsDir, made);
  }
  made.set(key, ext);
}

function rememberMade(thumbsDir: string, key: string, name: string): void {
  remember(thumbsDir, key, name.endsWith('.png') ? 'png' : 'jpg');
}

/**
 * The thumbnail of `key` an earlier process left in `thumbsDir` (a re-run, a restarted watch), looked
 * for once per process; undefined when there is none.
 */
function foundOnDisk(thumbsDir: string, key: string): string | undefined {
  if (madeIn.get(thumbsDir)?.has(key)) return madeName(thumbsDir, key);
  const ext = (['jpg', 'png'] as const).find((e) =>
    statSync(join(thumbsDir, `${key}.${e}`), { throwIfNoEntry: false })?.isFile(),
  );
  remember(thumbsDir, key, ext ?? null);
  return madeName(thumbsDir, key);
}

async function cacheKey(file: string): Promise<string | null> {
  return keyOfStat(await stat(file).catch(() => null));
}

/**
 * cacheKey without a round trip through the fs threads: a refresh of the report looks at every source
 * of every item (tens of thousands), and a stat answered from the inode cache takes microseconds, far
 * less than its trip through the thread pool (or an error object for a file that is not there).
 */
function cacheKeySync(file: string): string | null {
  let st: Stats | undefined;
  try {
    st = statSync(file, { throwIfNoEntry: false });
  } catch {
    return null;
  }
  return keyOfStat(st ?? null);
}

/**
 * A source's thumbnail key: its file's identity (device and inode), size and mtime — not its path, so
 * the outputs of a file linked into a copy's folder (same content under another name) share one
 * thumbnail, and a file replaced at the same path gets a new one.
 */
function keyOfStat(st: Stats | null): string | null {
  if (!st?.isFile() || st.size === 0) return null;
  // 12 bytes as hex: a string of its own (a slice of the whole digest's hex would keep all of it).
  return createHash('sha256')
    .update(`${st.dev}:${st.ino}\0${st.size}\0${st.mtimeMs}`)
    .digest()
    .subarray(0, 12)
    .toString('hex');
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    (st) => st.isFile(),
    () => false,
  );
}

async function imageThumb(file: string, thumbsDir: string, key: string): Promise<string> {
  // Made by an earlier run: found without opening the source.
  const found = foundOnDisk(thumbsDir, key);
  if (found) return found;
  thumbnailCounts.opened++;
  const meta = await sharp(file, { failOn: 'none' }).metadata();
  const ext = meta.hasAlpha ? 'png' : 'jpg';
  const name = `${key}.${ext}`;
  const path = join(thumbsDir, name);
  if (await exists(path)) return name;
  const part = `${path}.${randomUUID().slice(0, 8)}.part`;
  try {
    const img = sharp(file, { failOn: 'none' })
      .autoOrient()
      .resize(THUMB_MAX_SIDE, THUMB_MAX_SIDE, { fit: 'inside', withoutEnlargement: true });
    await (meta.hasAlpha ? img.png({ compressionLevel: 9 }) : img.flatten().jpeg({ quality: 72 })).toFile(
      part,
    );
    await rename(part, path);
    return name;
  } catch (err) {
    await rm(part, { force: true });
    throw err;
  }
}

async function videoPoster(file: string, thumbsDir: string, key: string): Promise<string> {
  const name = `${key}.jpg`;
  const path = join(thumbsDir, name);
  if (await exists(path)) return name;
  thumbnailCounts.opened++;
  const { durationSeconds } = await probeVideo(file);
  const at = Math.min(1, durationSeconds * 0.25);
  const part = `${path}.${randomUUID().slice(0, 8)}.part`;
  try {
    await runFfmpeg(
      [
        '-ss',
        at.toFixed(3),
        '-i',
        file,
        '-frames:v',
        '1',
        '-vf',
        `scale='min(${THUMB_MAX_SIDE},iw)':'min(${THUMB_MAX_SIDE},ih)':force_original_aspect_ratio=decrease`,
        '-q:v',
        '5',
        '-f',
        'image2',
        '-c:v',
        'mjpeg',
        '-update',
        '1',
        part,
      ],
      { what: 'poster frame could not be made' },
    );
    if (!(await exists(part))) throw new Error('no frame');
    await rename(part, path);
    return name;
  } catch (err) {
    await rm(part, { force: true });
    throw err;
  }
}

/**
 * Makes (or reuses) the thumbnail of one image or video in `thumbsDir`.
 *
 * @param file absolute path of the source
 * @param kind how to read it: sharp for images, a poster frame by ffmpeg for videos
 * @returns the thumbnail's file name inside `thumbsDir`, or null when the source cannot be thumbnailed
 * @example const name = await makeThumbnail('/in/a.jpg', 'image', '/out/.thumbs');
 */
export async function makeThumbnail(
  file: string,
  kind: 'image' | 'video',
  thumbsDir: string,
): Promise<string | null> {
  const key = await cacheKey(file);
  if (!key) return null;
  return madeName(thumbsDir, key) ?? (await makeKeyed(file, kind, thumbsDir, key));
}

/** makeThumbnail once the cache key is known and nothing was remembered for it. */
async function makeKeyed(
  file: string,
  kind: 'image' | 'video',
  thumbsDir: string,
  key: string,
): Promise<string | null> {
  try {
    await mkdir(thumbsDir, { recursive: true });
    const name =
      kind === 'image' ? await imageThumb(file, thumbsDir, key) : await videoPoster(file, thumbsDir, key);
    rememberMade(thumbsDir, key, name);
    return name;
  } catch {
    return null;
  }
}

/**
 * What to draw for each source file (absolute path): its thumbnail's path relative to the out dir ('/'
 * separated), or the source's own (see MakeThumbnailsOptions).
 */
export type Thumbnails = ReadonlyMap<string, string>;

/** The files of an item worth a thumbnail: its input, its outputs and its composite. */
export function thumbSources(item: Item, outDir: string): { file: string; kind: 'image' | 'video' }[] {
  const out: { file: string; kind: 'image' | 'video' }[] = [];
  const inputKind = item.sniff?.kind;
  const kind =
    inputKind === 'image' || inputKind === 'video'
      ? inputKind
      : inputKind === undefined || inputKind === null
        ? thumbKindOfName(item.input)
        : null;
  if (kind) out.push({ file: item.absPath, kind });
  // A chain's every step; any other item's current step.
  const steps = isChain(item) ? item.steps : [currentStep(item)].filter((s) => s !== undefined);
  const made = steps.flatMap((step) => [...step.outputs, ...(step.composite ? [step.composite] : [])]);
  for (const rel of made) {
    const k = thumbKindOfName(rel);
    if (k) out.push({ file: join(outDir, ...rel.split('/')), kind: k });
  }
  return out;
}

/** How makeThumbnails treats a source that has no thumbnail yet. */
export interface MakeThumbnailsOptions {
  /**
   * false: an image in the out dir that a browser draws itself (PNG, JPEG, WebP, GIF, AVIF) and that
   * has no thumbnail yet (made by this process or left by an earlier one) is shown as it is — its own
   * path stands for its thumbnail; inputs (outside the out dir: the report must draw on its own),
   * videos and other images are still made. For the files past the report's first page. Default true.
   */
  imagesToo?: boolean;
  /**
   * Told how long the call waited for thumbnails being made (ms), when it made any: the looking up of
   * those made before, a stat per source, is not counted.
   */
  madeIn?: (ms: number) => void;
}

/**
 * Makes the thumbnails of every item's input, outputs and composite (at most THUMB_CONCURRENCY at
 * once), reusing those made before (remembered ones without opening their source).
 *
 * @returns source file (absolute) → what to draw for it: its thumbnail's path relative to the out dir
 *   ('/' separated), or with `imagesToo: false` possibly the source's own
 * @example const thumbs = await makeThumbnails(items, '/data/out');
 */
export async function makeThumbnails(
  items: Iterable<Item>,
  outDir: string,
  options: MakeThumbnailsOptions = {},
): Promise<Thumbnails> {
  const thumbsDir = join(outDir, THUMBS_DIR);
  const limit = pLimit(THUMB_CONCURRENCY);
  const sources = new Map<string, 'image' | 'video'>();
  for (const item of items) for (const s of thumbSources(item, outDir)) sources.set(s.file, s.kind);
  const thumbs = new Map<string, string>();
  const fromOutDir = (file: string) => relative(outDir, file).split(sep).join('/');
  const shownAsIs = (file: string, kind: 'image' | 'video') =>
    options.imagesToo === false &&
    kind === 'image' &&
    BROWSER_IMAGE_EXTS.has(extname(file).toLowerCase()) &&
    !fromOutDir(file).startsWith('../');
  // One making per key: the outputs a copy's folder links to (same inode) are made once, not per path.
  const making = new Map<string, Promise<string | null>>();
  // Each source is looked up synchronously; only the makings are waited for below.
  const looked = Promise.all(
    [...sources].map(async ([file, kind]) => {
      const key = cacheKeySync(file);
      if (!key) return;
      let name = madeName(thumbsDir, key) ?? null;
      if (!name && shownAsIs(file, kind)) {
        name = foundOnDisk(thumbsDir, key) ?? null;
        if (!name) {
          thumbs.set(file, fromOutDir(file));
          return;
        }
      }
      if (!name) {
        let made = making.get(key);
        if (!made) {
          made = limit(() => makeKeyed(file, kind, thumbsDir, key));
          making.set(key, made);
        }
        name = await made;
      }
      if (name) thumbs.set(file, fromOutDir(join(thumbsDir, name)));
    }),
  );
  const waitFrom = performance.now();
  await looked;
  if (making.size > 0) options.madeIn?.(performance.now() - waitFrom);
  return thumbs;
}
