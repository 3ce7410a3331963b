/**
 * Reading image headers with sharp (no pixel decode) and, for callers that must know an image really
 * decodes, a full streaming decode. Neither holds the source bytes in JS memory: libvips reads the file.
 */
import { stat } from 'node:fs/promises';
import sharp from 'sharp';
import { imageEnd } from './image-end.ts';
import { MediaError, plainWhy } from './media-error.ts';

export interface ImageHeader {
  width: number;
  height: number;
  /** sharp's format name: 'jpeg', 'png', 'webp', 'gif', 'heif' (HEIC and AVIF), 'tiff', ... */
  format: string;
  /** Number of bands, alpha included (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA or CMYK). */
  channels?: number;
  /** Whether the image has an alpha channel. */
  hasAlpha?: boolean;
  /** Number of pages/frames (animated GIF/WebP, multi-page TIFF), when more than one. */
  pages?: number;
  /** EXIF orientation 1..8, when present. */
  orientation?: number;
}

/**
 * libvips' reason in plain words: its first line without the loader's and the header read's prefixes
 * ("pngload: ", "input file has corrupt header: ") and without any path.
 */
function reason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  let why = plainWhy(msg.split('\n')[0] ?? '');
  for (;;) {
    const shorter = why
      .replace(/^[A-Za-z]+load(?:_[a-z]+)?:\s*/, '')
      .replace(/^Vips[A-Za-z]+:\s*/, '')
      .replace(/^input file has corrupt header:\s*/i, '')
      .trim();
    if (shorter === why || shorter === '') break;
    why = shorter;
  }
  return why.charAt(0).toLowerCase() + why.slice(1);
}

/** Decoder words that mean the data ended early. */
const TRUNCATED_WORDS =
  /premature end|end of (?:stream|file|data|source data)|truncated|unexpected end|not enough data/i;

/**
 * The MediaError for an error sharp threw while reading an image, with a plain reason
 * ("image could not be decoded: <why>"). For callers that run their own sharp pipelines on inputs;
 * the checks of a file ({@link readImageHeader}, {@link verifyImage}) say more, from the file itself.
 */
export function imageErrorFrom(err: unknown): MediaError {
  if (err instanceof MediaError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  if (/Input file is missing/i.test(msg)) return new MediaError('missing', 'image file not found');
  if (/unsupported image format/i.test(msg)) {
    return new MediaError(
      'unsupported',
      'image could not be decoded: unsupported or unrecognised image format',
    );
  }
  const why = reason(err);
  if (TRUNCATED_WORDS.test(why)) {
    return new MediaError('corrupt', `image could not be decoded: the file is truncated (${why})`);
  }
  return new MediaError('corrupt', `image could not be decoded: ${why}`);
}

/**
 * The MediaError for a failed read of the image file at `path`, saying what is wrong with the file:
 * `image could not be decoded: the PNG file is truncated (<decoder's words>)` when it ends before its
 * structure does (or the decoder says its data ended early), `… is corrupt (…)` when it holds all its
 * parts but does not decode, `the file is truncated or corrupt (…)` for a format whose structure is
 * not read (see image-end.ts).
 */
async function fileImageError(path: string, err: unknown): Promise<MediaError> {
  const plain = imageErrorFrom(err);
  if (plain.code !== 'corrupt' && plain.code !== 'unsupported') return plain;
  const end = await imageEnd(path);
  // Bytes of no format sharp reads stay "unsupported"; a known format cut short says so.
  if (plain.code === 'unsupported' && end?.verdict !== 'cut') return plain;
  const why = plain.code === 'unsupported' ? 'unsupported or unrecognised image format' : reason(err);
  const cut = end?.verdict === 'cut' || TRUNCATED_WORDS.test(why);
  const problem = cut ? 'truncated' : end ? 'corrupt' : 'truncated or corrupt';
  return new MediaError(
    'corrupt',
    `image could not be decoded: the ${end ? `${end.format} ` : ''}file is ${problem} (${why})`,
  );
}

/** Rejects early, with a plainer reason than the decoder would give, for a missing or empty file. */
async function checkNotEmpty(path: string): Promise<void> {
  const size = await stat(path).then(
    (st) => (st.isFile() ? st.size : -1),
    () => -1,
  );
  if (size < 0) throw new MediaError('missing', 'image file not found');
  if (size === 0) throw new MediaError('corrupt', 'image could not be decoded: file is empty');
}

/**
 * Decodes run side by side; a decode that must read libvips' error text runs alone: it waits until no
 * decode is under way and keeps new ones waiting until it is done. Serialising only the retries is not
 * enough: a first attempt failing at the same moment can still take the text, the more often the more
 * decodes overlap (a busy machine).
 */
class DecodeGate {
  #active = 0;
  #alone = false;
  #tail: Promise<unknown> = Promise.resolve();
  #waiting: Array<() => void> = [];

  async shared<T>(fn: () => Promise<T>): Promise<T> {
    while (this.#alone) await new Promise<void>((r) => this.#waiting.push(r));
    this.#active += 1;
    try {
      return await fn();
    } finally {
      this.#active -= 1;
      if (this.#active === 0) this.#wake();
    }
  }

  alone<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(async () => {
      this.#alone = true;
      try {
        while (this.#active > 0) await new Promise<void>((r) => this.#waiting.push(r));
        return await fn();
      } finally {
        this.#alone = false;
        this.#wake();
      }
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }

  #wake(): void {
    for (const r of this.#waiting.splice(0)) r();
  }
}

const decodeGate = new DecodeGate();

/**
 * Reads an image's header with sharp's metadata() (no full decode). Rejects with a MediaError whose
 * message is a plain reason ("image could not be decoded: the GIF file is truncated (…)") when the
 * file is missing, empty, not an image, or its header is damaged or cut. A truncated body may still
 * pass: use {@link verifyImage}.
 *
 * @param path a local file path
 * @example const { width, height, format } = await readImageHeader('photo.jpg');
 */
export async function readImageHeader(path: string): Promise<ImageHeader> {
  await checkNotEmpty(path);
  let meta: sharp.Metadata;
  try {
    meta = await decodeGate.shared(() => sharp(path, { failOn: 'error' }).metadata());
  } catch (err) {
    throw await fileImageError(path, err);
  }
  if (!meta.format || !meta.width || !meta.height) {
    throw new MediaError('corrupt', 'image could not be decoded: frame size is unknown');
  }
  const header: ImageHeader = { width: meta.width, height: meta.height, format: meta.format };
  header.hasAlpha = meta.hasAlpha === true;
  if (meta.channels !== undefined) header.channels = meta.channels;
  if (meta.pages !== undefined && meta.pages > 1) header.pages = meta.pages;
  if (meta.orientation !== undefined) header.orientation = meta.orientation;
  return header;
}

/**
 * Fully decodes the image (its first page) in a streaming way and resolves when every pixel decoded,
 * so truncated or damaged bodies are caught. libvips streams the file through a tiny resize; only an
 * 8x8 thumbnail ever reaches JS memory. Rejects like {@link readImageHeader}.
 *
 * @param path a local file path
 * @example await verifyImage('upload.jpg');
 * // throws "image could not be decoded: the JPEG file is truncated (premature end of JPEG image)"
 */
export async function verifyImage(path: string): Promise<void> {
  await checkNotEmpty(path);
  try {
    await decodeGate.shared(() => decodeTiny(path));
  } catch (err) {
    throw await fileImageError(path, await explainedError(path, err));
  }
}

function decodeTiny(path: string): Promise<Buffer> {
  return sharp(path, { failOn: 'error', sequentialRead: true })
    .resize(8, 8, { fit: 'inside' })
    .raw()
    .toBuffer();
}

/** A decode error whose text libvips lost: "unknown error", or a message that stops after its colon. */
const UNEXPLAINED = /unknown error|:\s*$/i;

/**
 * libvips keeps its error text in a buffer shared by all threads, so when two decodes fail at once one
 * of them can come back as "unknown error". Decoding such a file again, alone, recovers the real reason:
 * the error that explains, else the first.
 */
async function explainedError(path: string, err: unknown): Promise<unknown> {
  if (!UNEXPLAINED.test(reason(err))) return err;
  return decodeGate.alone(async () => {
    for (let i = 0; i < 2; i++) {
      try {
        await decodeTiny(path);
        return err;
      } catch (again) {
        if (!UNEXPLAINED.test(reason(again))) return again;
      }
    }
    return err;
  });
}
