/**
 * Recognising an output URL the emulator signed itself, whatever host name it carries (the caller may
 * have reached the emulator by any name): its path is an output's and its signature is the emulator's.
 * The fetch of `url` media reads such outputs from the store, as the service's fetch proxy reaches its
 * own storage.
 */
import type { EmulatorContext } from '../context.ts';
import { checkSignature, STORAGE_PREFIX } from '../signing.ts';
import type { StoredOutput } from '../store.ts';

const OUTPUT_PATH = new RegExp(`^${STORAGE_PREFIX}/outputs/([^/?#]+)/(\\d{1,4})$`);

/** What the storage host would answer for one of its own output URLs: the output, or 403 / 404. */
export type OwnOutput = { status: 200; output: StoredOutput } | { status: 403 | 404 };

/**
 * The output a URL names when the emulator signed it (in time or expired); null for any other URL
 * (another path, or a signature that is not the emulator's), which is fetched like any URL.
 */
export function ownOutputOf(ctx: EmulatorContext, url: URL): OwnOutput | null {
  const m = OUTPUT_PATH.exec(url.pathname);
  if (!m) return null;
  const verdict = checkSignature(ctx, 'GET', url.pathname, Object.fromEntries(url.searchParams));
  if (!verdict.ok) return verdict.why === 'expired' ? { status: 403 } : null;
  const output = ctx.store.generations.get(m[1] ?? '')?.outputs[Number(m[2])];
  return output ? { status: 200, output } : { status: 404 };
}
