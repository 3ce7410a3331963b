/**
 * How far V8 lets genpipe's heap grow before a full collection. A batch keeps a small live heap
 * (about 20 MB) while allocating fast: V8 starts marking once the room left below its next limit is
 * less than the young generation's capacity (32 MB on 64-bit Node 20), and with a 20 MB heap its own
 * limit leaves less than that, so it marked almost without pause (200 full collections in 35 s over
 * 2,000 prompt files; V8's helper threads spent as much CPU as genpipe itself). So a small heap may
 * grow to three times what survived the last full collection.
 *
 * A factor makes the peak heap a multiple of the live one, though: every byte a long batch keeps costs
 * three at the peak (V8's own factor, up to four, no better). Past SMALL_HEAP_BYTES the room above what
 * survived is held at HEAP_HEADROOM_BYTES instead (the factor shrinks as the heap grows, never below
 * MIN_GROWING_PERCENT), so a live heap that grows by some megabytes raises the peak by as much, not by
 * three times as much. The factor is worked out again after every full collection, from what survived.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/** While the heap is small, the old generation may reach (1 + 200 / 100) × what survived. */
export const SMALL_HEAP_GROWING_PERCENT = 200;

/** The room above what survived that a heap past SMALL_HEAP_BYTES is given before a full collection. */
export const HEAP_HEADROOM_BYTES = 64 * 2 ** 20;

/** Below this heap size, the headroom would be more than SMALL_HEAP_GROWING_PERCENT gives. */
export const SMALL_HEAP_BYTES = (HEAP_HEADROOM_BYTES * 100) / SMALL_HEAP_GROWING_PERCENT;

/** The least growing percent, whatever the heap's size (V8's own least factor is 1.1). */
export const MIN_GROWING_PERCENT = 25;

/** The growing percent for a heap of which `usedBytes` survived the last full collection. */
export function growingPercentFor(usedBytes: number): number {
  if (usedBytes < SMALL_HEAP_BYTES) return SMALL_HEAP_GROWING_PERCENT;
  return Math.max(MIN_GROWING_PERCENT, Math.round((100 * HEAP_HEADROOM_BYTES) / usedBytes));
}

/**
 * Keeps V8's heap growing factor suited to the heap's size for the rest of the process, unless the
 * user gave one (node's command line or NODE_OPTIONS). V8 reads this flag each time it computes its
 * next limit (after a full collection), so changing it while running is safe (unlike flags that shape
 * the heap, which are fixed when it is made).
 *
 * @returns false when the user's own setting was left alone
 */
export function growHeapBeforeMarking(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): boolean {
  if ([...execArgv, nodeOptions].some((a) => /heap[-_]growing[-_]percent/.test(a))) return false;
  let set = -1;
  const look = () => {
    const percent = growingPercentFor(getHeapStatistics().used_heap_size);
    if (percent === set) return;
    setFlagsFromString(`--heap-growing-percent=${percent}`);
    set = percent;
  };
  look();
  // Read right after each full collection: the heap then holds little more than what survived it.
  new PerformanceObserver((list) => {
    const entries = list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[];
    if (entries.some((e) => e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) look();
  }).observe({ entryTypes: ['gc'] });
  return true;
}
