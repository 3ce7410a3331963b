/**
 * A worker's heartbeat in the store: its row (id, host, pid, jobs in hand) renewed every `intervalMs`,
 * so that `genpipe status --store` can tell the workers alive from those gone (a row not renewed for a
 * few heartbeats). A beat that fails says so (the store cannot be reached: /healthz answers 503) and
 * the next that succeeds says it is over; the row is removed when the worker stops.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { WORKER_HEARTBEAT_MS, type WorkerBeat, type WorkerRole } from './worker-registry.ts';

/** What the heartbeat writes to. */
export interface HeartbeatStore {
  beatWorker(beat: WorkerBeat): Promise<void>;
  forgetWorker(id: string): Promise<void>;
}

export interface HeartbeatOptions {
  store: HeartbeatStore;
  /** Between two beats (default WORKER_HEARTBEAT_MS). */
  intervalMs?: number;
  /** Jobs in hand now. */
  inHand: () => number;
  /** What this process is (default a worker). */
  role?: WorkerRole;
  /** After each beat: null when it was recorded, else why not (redacted by the store). */
  onBeat?: (problem: string | null) => void;
}

export class WorkerHeartbeat {
  readonly id = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private readonly intervalMs: number;

  constructor(private readonly opts: HeartbeatOptions) {
    this.intervalMs = opts.intervalMs ?? WORKER_HEARTBEAT_MS;
  }

  /** Records the first beat (its failure thrown) and renews it every interval. */
  async start(): Promise<void> {
    await this.opts.store.beatWorker(this.row());
    this.opts.onBeat?.(null);
    this.timer = setInterval(() => {
      this.beating ??= this.opts.store
        .beatWorker(this.row())
        .then(
          () => this.opts.onBeat?.(null),
          (err: Error) => this.opts.onBeat?.(err.message),
        )
        .finally(() => {
          this.beating = null;
        });
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Stops beating and removes the row (best effort: a row left lapses on its own). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    await this.opts.store.forgetWorker(this.id).catch(() => undefined);
  }

  private row(): WorkerBeat {
    return {
      role: this.opts.role ?? 'worker',
      id: this.id,
      host: hostname(),
      pid: process.pid,
      heartbeatMs: this.intervalMs,
      inHand: this.opts.inHand(),
    };
  }
}
