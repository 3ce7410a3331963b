/** Small text formatters shared by the progress displays and the reports. */

/**
 * Invisible characters that act on how a line reads: the bidi embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069), the direction marks (U+200E, U+200F, U+061C), the zero-width space
 * and joiners (U+200B–U+200D, U+2060) and the byte-order mark (U+FEFF).
 */
import { pluralNoun } from '../../spec/plural.ts';

/** Tested per character by printable (the dashboard's page embeds both). */
export const INVISIBLE = /[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/;

/**
 * A text safe to print on one terminal line: control characters (newlines, escape sequences, C1
 * controls) are shown as `\xNN`, and bidi controls and zero-width characters (which would flip or hide
 * the rest of the line) as `\u{NNNN}`, instead of acting on the terminal.
 *
 * @example printable('a\nb\u001b[2J') // → 'a\\x0ab\\x1b[2J'
 * @example printable('cat\u202Egpj.exe') // → 'cat\\u{202e}gpj.exe'
 */
export function printable(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (INVISIBLE.test(ch)) out += `\\u{${code.toString(16)}}`;
    else out += ch;
  }
  return out;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * Wall-clock time of day `HH:MM:SS`, in local time (or UTC).
 *
 * @example clockTime(Date.UTC(2026, 0, 1, 12, 0, 1), { utc: true }) // → '12:00:01'
 */
export function clockTime(ms: number, opts: { utc?: boolean } = {}): string {
  const d = new Date(ms);
  return opts.utc
    ? `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`
    : `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/**
 * A duration for people: `850ms`, `12.3s`, `4m05s`, `2h03m`.
 *
 * @example formatDuration(245_000) // → '4m05s'
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${pad2(s % 60)}s`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)}h${pad2(m % 60)}m`;
}

/**
 * A byte count for people: `512 B`, `1.2 KiB`, `3.4 MiB`, `1.1 GiB` (powers of 1024, labelled so: the
 * service's "50 MB" image limit is 50 MiB, and a size shown in the same unit compares with it).
 *
 * @example formatBytes(1536) // → '1.5 KiB'
 */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/**
 * A file's size for people with its exact byte count: `50.5 MiB (53,000,000 bytes)`, `512 bytes`.
 *
 * @example formatSize(53_000_000) // → '50.5 MiB (53,000,000 bytes)'
 */
export function formatSize(n: number): string {
  const exact = `${n.toLocaleString('en-US')} ${pluralNoun(n, 'byte')}`;
  return n < 1024 ? exact : `${formatBytes(n)} (${exact})`;
}

/**
 * `text` cut to at most `width` characters, ending with '…' when cut.
 *
 * @example ellipsize('a-very-long-name.png', 10) // → 'a-very-lo…'
 */
export function ellipsize(text: string, width: number): string {
  if (width <= 0) return '';
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, width - 1).join('')}…`;
}
