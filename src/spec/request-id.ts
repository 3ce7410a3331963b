/**
 * What an X-Request-Id may be. The interface says only that a create takes an optional X-Request-Id,
 * echoed back, and that the service makes a UUID when there is none; a header value is visible ASCII, so
 * genpipe's rule (the emulator echoes exactly these, and makes a fresh UUID for anything else) is 1 to
 * REQUEST_ID_MAX_LENGTH visible ASCII characters. genpipe sends a UUID unless told one (`--request-id`).
 */

/** The longest request id taken and echoed. */
export const REQUEST_ID_MAX_LENGTH = 200;

/** The rule in words, for an error. */
export const REQUEST_ID_FORM = `1 to ${REQUEST_ID_MAX_LENGTH} visible ASCII characters (no space, line break or other control character)`;

const REQUEST_ID_RE = new RegExp(`^[\\x21-\\x7e]{1,${REQUEST_ID_MAX_LENGTH}}$`);

/**
 * Whether `text` can be an X-Request-Id: 1 to 200 visible ASCII characters.
 *
 * @example isRequestId('') // false
 * @example isRequestId('my-batch/42') // true
 */
export function isRequestId(text: string): boolean {
  return REQUEST_ID_RE.test(text);
}
