/**
 * The stop and cancel policy of a batch, in one place. Two signals: `stopping` ends the start of new
 * work (stop(), a batch-stopping answer of the service, an unreadable input dir, a journal failure),
 * `abort` cancels work in flight (the caller's signal, the end of stop()'s grace, a journal failure:
 * a create whose id cannot be recorded could be paid twice; an out dir that refuses writes). The first reason to stop is the one kept.
 */
import { setMaxListeners } from 'node:events';
import { LocalWriteError } from '../../client/index.ts';

/** The journal could not record a transition: the batch stops at once (see RunOptions.persist). */
export class JournalWriteError extends Error {
  override name = 'JournalWriteError';
}

/**
 * What a failed journal write says, naming the journal at `location` when the disk is at fault:
 * SQLite's SQLITE_FULL ("database or disk is full") and a refused file write (ENOSPC, EROFS, …) as the
 * local write error they are (`no space left on <journal>`); anything else in its own words.
 *
 * @example journalErrorWords(sqliteFull, '/out/.genpipe/journal.db') // 'no space left on /out/.genpipe/journal.db'
 */
export function journalErrorWords(err: unknown, location: string | null): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (location !== null) {
    if (code === 'SQLITE_FULL') return new LocalWriteError('ENOSPC', location, err).message;
    const refused = LocalWriteError.from(err, location);
    if (refused) return refused.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Why a batch ended early. */
export interface BatchStop {
  reason: string;
  /**
   * service: 401/402/403/unreachable; interrupted: stop() (SIGINT); aborted: the signal; input: the
   * input dir could not be read; journal: the journal could not be written; output: the out dir could
   * not be written (full, read-only, forbidden).
   */
  cause: 'service' | 'interrupted' | 'aborted' | 'input' | 'journal' | 'output';
  /**
   * Set when the stop is how the batch normally ends (a watch stopped by a signal), in those words
   * (`Ctrl-C / SIGINT`): the batch did not stop early, and its reports say it was stopped.
   */
  end?: string;
}

/** A batch's stop state: its two signals and why it stopped. */
export class StopControl {
  /** Cancels in-flight work. */
  readonly abort = new AbortController();
  /** Stops new work only. */
  readonly stopping = new AbortController();
  private why: BatchStop | null = null;
  private graceTimer: NodeJS.Timeout | null = null;
  private readonly onOuterAbort = (): void => {
    this.trigger('the batch was cancelled', 'aborted');
    this.abort.abort(this.outer?.reason);
  };

  /**
   * @param outer - the caller's signal: aborting it cancels the batch, in-flight work included
   * @param onStopping - told once, when the batch starts stopping
   * @param journalLocation - the journal's file (or store), named when its disk refuses a write
   */
  constructor(
    private readonly outer: AbortSignal | undefined,
    private readonly onStopping: (reason: string, end?: string) => void,
    private readonly journalLocation: string | null = null,
  ) {
    // Every in-flight stage, request and slot wait listens to these: many more than Node's warning limit.
    setMaxListeners(0, this.abort.signal, this.stopping.signal);
    if (outer?.aborted) this.onOuterAbort();
    else outer?.addEventListener('abort', this.onOuterAbort, { once: true });
  }

  /** True when a local failure (the journal, the out dir) stopped the batch, not a cancel. */
  get failedLocally(): boolean {
    return this.why?.cause === 'journal' || this.why?.cause === 'output';
  }

  /** Why the batch stopped, or null while it runs on. */
  get stop(): BatchStop | null {
    return this.why;
  }

  /** The batch stops taking new work (the first reason wins). */
  trigger(reason: string, cause: BatchStop['cause'], end?: string): void {
    if (this.why) return;
    this.why = { reason, cause, ...(end === undefined ? {} : { end }) };
    this.onStopping(reason, end);
    this.stopping.abort(new Error(reason));
  }

  /**
   * stop(): no new work; work already at the service goes on, for `graceMs` at most when given (then
   * it is cancelled and left, as far as it got, to the journal). `end`: see Batch.stop.
   */
  interrupt(reason: string, graceMs: number | undefined, end?: string): void {
    this.trigger(reason, 'interrupted', end);
    if (graceMs === undefined || this.graceTimer !== null || this.abort.signal.aborted) return;
    this.graceTimer = setTimeout(() => {
      this.abort.abort(new DOMException('the stop grace period ran out', 'AbortError'));
    }, graceMs);
    this.graceTimer.unref();
  }

  /** The journal failed: nothing more may be sent (a create whose id cannot be recorded could be paid twice). */
  journalFailed(err: unknown): JournalWriteError {
    if (err instanceof JournalWriteError) return err;
    const why = journalErrorWords(err, this.journalLocation);
    const failure = new JournalWriteError(`the journal could not be written (${why})`);
    this.stopLocally(failure, 'stopped so that no work is sent without being recorded', 'journal');
    return failure;
  }

  /**
   * The out dir refused a write (full, over quota, read-only, forbidden: `err` says which, and where):
   * the batch stops as a journal failure stops it, since no other file's outputs could be kept either.
   * Work already at the service is left to the journal, which the next run collects it from.
   */
  outDirFailed(err: LocalWriteError): void {
    const failure = new Error(`the out dir could not be written: ${err.message}`);
    this.stopLocally(failure, 'stopped; the next run collects what was generated', 'output');
  }

  /** A local failure no file escapes: stops the batch (`failure`'s words and `then`) and cancels its work. */
  private stopLocally(failure: Error, then: string, cause: BatchStop['cause']): void {
    this.trigger(`${failure.message}; ${then}`, cause);
    this.abort.abort(failure);
  }

  /** Timers and listeners released, once the batch ended. */
  dispose(): void {
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.outer?.removeEventListener('abort', this.onOuterAbort);
  }
}
