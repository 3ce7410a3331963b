/**
 * The one error class of the media helpers. Its message is a plain reason fit for a `failure_reason`
 * (no stack, no command line, no secrets); `code` says what kind of failure it was.
 */

/**
 * - `corrupt`: the bytes are of a known kind but could not be decoded (truncated, damaged, empty).
 * - `unsupported`: the bytes are not a format the helpers handle.
 * - `missing`: the file does not exist or cannot be read.
 * - `tool`: ffmpeg/ffprobe could not be started or failed on its own.
 * - `aborted`: the caller's AbortSignal fired.
 */
export type MediaErrorCode = 'corrupt' | 'unsupported' | 'missing' | 'tool' | 'aborted';

export class MediaError extends Error {
  override name = 'MediaError';
  constructor(
    readonly code: MediaErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** True when `err` is a MediaError (optionally of the given code). */
export function isMediaError(err: unknown, code?: MediaErrorCode): err is MediaError {
  return err instanceof MediaError && (code === undefined || err.code === code);
}

/**
 * The last meaningful line of a tool's or library's error text, without absolute paths, capped in
 * length: what a person needs to know, nothing more.
 *
 * @example plainWhy('ffprobe exited with code 1\n/tmp/x.mp4: Invalid data found when processing input')
 * // → 'Invalid data found when processing input'
 */
export function plainWhy(text: string, max = 200): string {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(
      (l) =>
        l.length > 0 &&
        !/^(ffprobe|ffmpeg) (exited with code|was killed)/.test(l) &&
        !/^(Conversion failed!?|Exiting normally.*)$/.test(l),
    );
  let line = lines.at(-1) ?? text.trim();
  // "<path>: reason" → "reason"; any other absolute path → its base name.
  line = line.replace(/^(?:[A-Za-z]:)?[/\\][^:]*:\s*/, '');
  line = line.replace(/(?:[A-Za-z]:)?[/\\](?:[^\s/\\'"]+[/\\])+([^\s/\\'"]+)/g, '$1');
  if (line.length === 0) line = 'unknown error';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
