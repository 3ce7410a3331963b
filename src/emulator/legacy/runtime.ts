/**
 * Runtime state of the legacy surface that does not belong in the store: what a live generation's
 * callbacks need (the caller's base URL, the signing key, the ordered delivery chain), and one
 * AbortSignal per app that fires when the app starts closing.
 */
import type { EmulatorContext } from '../context.ts';

/** What a live legacy generation needs beyond its GenerationRec. */
export interface LegacyJob {
  /** Base URL (scheme://host[:port]) of the create request; storage URLs in callbacks use it. */
  base: string;
  /** The API key that created the generation; the HMAC key of its callback signatures. Never logged. */
  apiKey: string;
  requestId: string;
  callbackUrl: string | null;
  /** Tail of this generation's callback deliveries; each new one waits for it, so they arrive in order. */
  chain: Promise<void>;
  /** Resolves when the generation reaches completed or failed (or its run is abandoned). */
  ended: Promise<void>;
  end: () => void;
}

export interface LegacyRuntime {
  /** Aborted when the app begins to close: stops source fetches, renders and callback retries. */
  closing: AbortController;
}

const runtimes = new WeakMap<EmulatorContext, LegacyRuntime>();

/** The legacy runtime of one emulator app, created on first use. */
export function legacyRuntime(ctx: EmulatorContext): LegacyRuntime {
  let rt = runtimes.get(ctx);
  if (!rt) {
    rt = { closing: new AbortController() };
    runtimes.set(ctx, rt);
  }
  return rt;
}
