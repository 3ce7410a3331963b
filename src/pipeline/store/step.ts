/**
 * A store's row work written once for a synchronous database (SQLite) and an asynchronous one
 * (PostgreSQL): each piece is a generator that `yield*`s the row operations it needs. An operation of
 * an asynchronous adapter yields the promise of its answer (`waitFor`); one of a synchronous adapter
 * returns its answer at once and yields nothing. `runNow` runs a piece to its end synchronously (inside
 * one SQLite transaction), `runAsync` awaits each promise it yields.
 *
 * @example
 * function* activeOrNew(rows: ItemRows, input: string): Step<number> {
 *   const row = yield* rows.active(input);
 *   return row ? row.id : yield* rows.insert(...);
 * }
 */

/** A piece of row work answering T: yields the promises it waits for (none on a synchronous adapter). */
export type Step<T> = Generator<Promise<unknown>, T, unknown>;

/** The answer of `promise`, within a Step (an asynchronous adapter's row operation). */
export function* waitFor<T>(promise: Promise<T>): Step<T> {
  return (yield promise) as T;
}

/** `value` as a Step (a synchronous adapter's row operation). */
// biome-ignore lint/correctness/useYield: a step that waits for nothing
export function* at<T>(value: T): Step<T> {
  return value;
}

/**
 * Runs `step` to its end now. For a synchronous adapter only: a step that waits for a promise is a
 * wiring error.
 */
export function runNow<T>(step: Step<T>): T {
  const r = step.next();
  if (!r.done) throw new Error('store: a synchronous step waited for a promise');
  return r.value;
}

/** Runs `step`, awaiting each promise it yields and handing its answer (or its failure) back. */
export async function runAsync<T>(step: Step<T>): Promise<T> {
  let r = step.next();
  while (!r.done) {
    let answer: unknown;
    try {
      answer = await r.value;
    } catch (err) {
      r = step.throw(err);
      continue;
    }
    r = step.next(answer);
  }
  return r.value;
}
