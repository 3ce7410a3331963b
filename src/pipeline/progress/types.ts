/** What every progress display is: an EventSink plus a close. */
import type { EventSink } from '../events.ts';

/** Where a display writes: process.stdout, process.stderr, or a test's fake. */
export interface ProgressStream {
  write(chunk: string): unknown;
  /** Terminal width, when a TTY. */
  columns?: number;
  isTTY?: boolean;
}

export interface ProgressDisplay {
  /** Feed it every PipelineEvent of the batch. */
  readonly sink: EventSink;
  /** Stops timers and writes what is still due; later events are ignored. */
  close(): void;
}
