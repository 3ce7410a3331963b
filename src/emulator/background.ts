/**
 * Background work of the emulator (generation lifecycles, ingest, callbacks, blob writes): scheduled or
 * tracked on the context, so that closing the app cancels what has not started and waits for what has.
 * Its own module so that the resource plugins need not import the app that registers them.
 */
import type { EmulatorContext } from './context.ts';

/** Schedules background work that is cancelled when the app closes. */
export function schedule(ctx: EmulatorContext, ms: number, fn: () => void | Promise<void>): void {
  if (ctx.closed) return;
  const t = setTimeout(
    () => {
      ctx.background.delete(t);
      if (ctx.closed) return;
      track(ctx, Promise.resolve().then(fn));
    },
    Math.max(0, ms),
  );
  ctx.background.add(t);
}

/** Tracks a background promise so close() waits for it; its failure is swallowed after logging. */
export function track<T>(ctx: EmulatorContext, p: Promise<T>): void {
  const guarded = p.catch((err) => {
    if (!ctx.closed) console.error('[emulator] background task failed:', err);
  });
  ctx.pending.add(guarded);
  guarded.finally(() => ctx.pending.delete(guarded));
}
