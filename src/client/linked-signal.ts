/**
 * One signal that aborts when any of several does (with that one's reason), tied to them by listeners
 * that release() removes: AbortSignal.any would leave a record of every call on signals that live as
 * long as a batch (Node 20 keeps them; see http-attempt.ts).
 */

/** A signal linked to others, and the release of its links. */
export interface LinkedSignal {
  /** Aborted by the first of the given signals to abort; undefined when none was given. */
  signal: AbortSignal | undefined;
  /** Removes the listeners on the given signals (call once the signal is no longer needed). */
  release(): void;
}

/**
 * @param signals - the signals to follow (undefined entries are ignored)
 * @example const held = linkedSignal(batch, stopping); try { await wait(held.signal) } finally { held.release() }
 */
export function linkedSignal(...signals: Array<AbortSignal | undefined>): LinkedSignal {
  const given = signals.filter((s): s is AbortSignal => s !== undefined);
  if (given.length <= 1) return { signal: given[0], release: () => {} };
  const link = new AbortController();
  const links: Array<[AbortSignal, () => void]> = [];
  const release = (): void => {
    for (const [s, onAbort] of links.splice(0)) s.removeEventListener('abort', onAbort);
  };
  for (const s of given) {
    if (s.aborted) {
      link.abort(s.reason);
      break;
    }
    const onAbort = (): void => {
      release();
      link.abort(s.reason);
    };
    links.push([s, onAbort]);
    s.addEventListener('abort', onAbort, { once: true });
  }
  if (link.signal.aborted) release();
  return { signal: link.signal, release };
}
