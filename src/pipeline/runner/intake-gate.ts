/**
 * The pause of a batch's intake (the dashboard's pause of a run): while closed, the files found wait
 * before they are started (none is sent); what is already started goes on. A stop opens it for good.
 */
export class IntakeGate {
  private closed = false;
  private waiters: Array<() => void> = [];

  get paused(): boolean {
    return this.closed;
  }

  /** No file is started until resume() (more calls: nothing). */
  pause(): void {
    this.closed = true;
  }

  resume(): void {
    this.closed = false;
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }

  /** Resolves once the gate is open, or at once when `signal` is aborted (the batch stops). */
  async wait(signal: AbortSignal): Promise<void> {
    if (!this.closed || signal.aborted) return;
    await new Promise<void>((open) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        open();
      };
      this.waiters.push(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
