/**
 * How far V8 lets genpipe's heap grow before a full collection. A batch keeps a small live heap
 * (about 20 MB) while allocating fast: V8 starts marking once the room left below its next limit is
 * less than the young generation's capacity (32 MB on 64-bit Node 20), and with a 20 MB heap its own
 * limit leaves less than that, so it marked almost without pause (200 full collections in 35 s over
 * 2,000 prompt files; V8's helper threads spent as much CPU as genpipe itself). While the heap is small,
 * genpipe lets the old generation reach three times what survived the last collection; once it is
 * larger than SMALL_HEAP_BYTES, V8's own factor leaves enough room and is used again.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/** While the heap is small, the old generation may reach (1 + 200 / 100) × what survived. */
export const SMALL_HEAP_GROWING_PERCENT = 200;

/** Below this heap size, V8's own growing factor leaves less room than its young generation takes. */
export const SMALL_HEAP_BYTES = 48 * 2 ** 20;

/** How often the heap's size is looked at, ms. */
const LOOK_EVERY_MS = 2_000;

/** The growing percent for a heap of `usedBytes`: 0 lets V8 choose (see the module comment). */
export function growingPercentFor(usedBytes: number): number {
  return usedBytes < SMALL_HEAP_BYTES ? SMALL_HEAP_GROWING_PERCENT : 0;
}

/**
 * Keeps V8's heap growing factor suited to the heap's size for the rest of the process, unless the
 * user gave one (node's command line or NODE_OPTIONS). V8 reads this flag each time it computes its
 * next limit, so changing it while running is safe (unlike flags that shape the heap, which are fixed
 * when it is made).
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
  setInterval(look, LOOK_EVERY_MS).unref();
  return true;
}
