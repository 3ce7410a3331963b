/**
 * The error of a file refused by the local check before it was uploaded (see local-check.ts). Its own
 * module, free of imports, so that printing errors loads no media code.
 */

/** What the refusal adds to the message: nothing left the machine. */
export const LOCAL_CHECK_NOTE = 'checked locally: nothing was uploaded or sent';

/** A local file refused by the local check; nothing was uploaded or sent. */
export class LocalCheckError extends Error {
  override name = 'LocalCheckError';
  readonly code = 'GENPIPE_LOCAL_CHECK';
  /**
   * @param subject - what is named first: the file, or the flag and the file (`--source photo.png`)
   * @param reason - the rule it breaks: the service's detail text, or the check's own reason
   */
  constructor(
    readonly subject: string,
    readonly reason: string,
  ) {
    super(reason.startsWith(`${subject}: `) ? reason : `${subject}: ${reason}`);
  }
}
