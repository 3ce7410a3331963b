/** Escaping for report.html: every user-supplied string goes through one of these. */

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Text escaped for HTML element content and double- or single-quoted attribute values.
 *
 * @example esc('<script>alert(1)</script>') // → '&lt;script&gt;alert(1)&lt;/script&gt;'
 */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * A relative URL for a path relative to the report ('/' separated): each segment percent-encoded (so
 * `#`, `?`, `%`, `:` and spaces in file names stay part of the path), then HTML-escaped for an attribute.
 *
 * @example relUrl('my photos/a#1.png') // → 'my%20photos/a%231.png'
 */
export function relUrl(path: string): string {
  return esc(path.split('/').map(encodeURIComponent).join('/'));
}
