/**
 * What `/healthz` answers, from a batch's events and what its process knows: the batch's state
 * (`starting` until batch_started, `running`, `stopping` from batch_stopping or the first signal,
 * `finished`), and a problem the process was told of (its store or the service known unreachable).
 * Healthy (200) while starting, running or finished; 503 while stopping or with a problem.
 */
import type { PipelineEvent } from '../events.ts';

export type BatchPhase = 'starting' | 'running' | 'stopping' | 'finished';

/** The body of `/healthz`. */
export interface HealthBody {
  /** `ok` (200), `stopping` or `unavailable` (503). */
  status: 'ok' | 'stopping' | 'unavailable';
  pid: number;
  /** Seconds since the process started. */
  uptime_seconds: number;
  batch: BatchPhase;
  /** Why the batch is stopping, or what is unreachable; absent when healthy. */
  reason?: string;
}

/** The batch's health, fed its events. */
export class BatchHealth {
  private phase: BatchPhase = 'starting';
  private stopReason: string | null = null;
  private problemText: string | null = null;

  /** Sees one event of the batch. */
  observe(event: PipelineEvent): void {
    switch (event.type) {
      case 'batch_started':
        if (this.phase === 'starting') this.phase = 'running';
        break;
      case 'batch_stopping':
        this.stopping(event.reason);
        break;
      case 'batch_finished':
        this.phase = 'finished';
        break;
    }
  }

  /** The process takes work now without a batch of its own (a worker, once its queue is ready). */
  running(): void {
    if (this.phase === 'starting') this.phase = 'running';
  }

  /** The process is stopping (a signal, before the batch may say so). */
  stopping(reason: string): void {
    if (this.phase === 'finished') return;
    this.phase = 'stopping';
    this.stopReason ??= reason;
  }

  /** Something the batch needs is known unreachable (its store, the service), or no more (null). */
  problem(text: string | null): void {
    this.problemText = text;
  }

  /** The HTTP status and body of `/healthz` now. */
  answer(): { code: 200 | 503; body: HealthBody } {
    const base = { pid: process.pid, uptime_seconds: Math.round(process.uptime() * 1000) / 1000 };
    if (this.phase === 'stopping') {
      return {
        code: 503,
        body: { status: 'stopping', ...base, batch: this.phase, reason: this.stopReason ?? 'stopping' },
      };
    }
    if (this.problemText !== null) {
      return {
        code: 503,
        body: { status: 'unavailable', ...base, batch: this.phase, reason: this.problemText },
      };
    }
    return { code: 200, body: { status: 'ok', ...base, batch: this.phase } };
  }
}
