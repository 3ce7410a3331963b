/** One AbortSignal per emulator app that fires when the app starts closing: stops fetches and renders. */
import type { EmulatorContext } from '../context.ts';

const controllers = new WeakMap<EmulatorContext, AbortController>();

function controllerOf(ctx: EmulatorContext): AbortController {
  let c = controllers.get(ctx);
  if (!c) {
    c = new AbortController();
    controllers.set(ctx, c);
  }
  return c;
}

/** The app's closing signal. */
export function closingSignal(ctx: EmulatorContext): AbortSignal {
  return controllerOf(ctx).signal;
}

/** Fires the closing signal (from the generations plugin's onClose hook). */
export function signalClosing(ctx: EmulatorContext): void {
  controllerOf(ctx).abort();
}
