/**
 * How the item's own media reaches the legacy surface, which takes media by URL only (its `media.url`):
 * the rule's `media_url`.
 *
 * - A URL template, `https://cdn.example.com/{path}`: `{path}` is the file's path relative to the
 *   input dir, each segment percent-encoded (`a b/c#1.mp4` → `a%20b/c%231.mp4`). genpipe sends the URL;
 *   the bytes must already be there (you publish the input folder at that address).
 * - `emulator`: against `genpipe serve` only, genpipe sends the file's bytes to the emulator
 *   (`PUT /_emulator/media`, loopback only) and sends the signed URL it answers. Not a feature of the
 *   service: against any other base URL it is refused before anything is sent.
 * Pure: no I/O.
 */
import { createHash } from 'node:crypto';

/** The `media_url` value that uses the emulator's own media store. */
export const EMULATOR_MEDIA_URL = 'emulator';
/** The placeholder of a template. */
const PATH_TOKEN = '{path}';

/**
 * What is wrong with a rule's `media_url`, or null.
 * @example mediaUrlProblem('https://cdn.example.com/{path}') // null
 */
export function mediaUrlProblem(value: unknown): string | null {
  const shape = `a URL template with ${PATH_TOKEN} (https://cdn.example.com/${PATH_TOKEN}) or '${EMULATOR_MEDIA_URL}' (genpipe serve only)`;
  if (value === EMULATOR_MEDIA_URL) return null;
  if (typeof value !== 'string' || !value.includes(PATH_TOKEN)) {
    return `must be ${shape}, not ${JSON.stringify(value) ?? String(value)}`;
  }
  const sample = value.replaceAll(PATH_TOKEN, 'x');
  const url = URL.canParse(sample) ? new URL(sample) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return `must be ${shape}: ${JSON.stringify(value)} does not make an http(s) URL`;
  }
  return null;
}

/**
 * The URL of a file by a `media_url` template.
 * @param input - the file's path relative to the input dir, `/`-separated
 * @example mediaUrlOf('https://cdn.example.com/{path}', 'a b/c#1.mp4') // 'https://cdn.example.com/a%20b/c%231.mp4'
 */
export function mediaUrlOf(template: string, input: string): string {
  const path = input.split('/').map(encodeURIComponent).join('/');
  return template.replaceAll(PATH_TOKEN, path);
}

/**
 * The mark of a rule's media_url in a planned request (`media: { url: '$input', media_url: <mark> }`):
 * `emulator`, or a digest of the template (never the template, which may hold a token). The planned
 * request is what the recipe hash takes, so a changed media_url is a changed recipe; the mark is never
 * sent (the URL replaces the whole `media`).
 * @example mediaUrlMark('https://cdn.example.com/{path}') // 'sha256:…' (16 hex digits)
 */
export function mediaUrlMark(template: string): string {
  if (template === EMULATOR_MEDIA_URL) return EMULATOR_MEDIA_URL;
  return `sha256:${createHash('sha256').update(template, 'utf8').digest('hex').slice(0, 16)}`;
}
