/**
 * Whether the store's server can be reached, watched for a long-lived process (a worker, a run waiting
 * for its jobs): the first failure that turns out to be the server gone is said once (the redacted URL
 * and the driver's words, never the password), then the server is tried again with backoff
 * (REACH_BACKOFF: 1 s, doubling, at most 30 s between tries) until it answers, which is said once too.
 * Errors met while it is down are not said again.
 */
import pg from 'pg';
import { clientConfig, messageOf, redactUrl, scrub } from './connection.ts';

/** The waits between two tries of a server that went away. */
export const REACH_BACKOFF = { firstMs: 1_000, maxMs: 30_000 } as const;

/** Connects to the store and asks it one trivial thing; throws when it cannot. */
async function probe(url: string): Promise<void> {
  const client = new pg.Client({ ...clientConfig(url, 'public'), connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

export class StoreReachability {
  private down: Promise<void> | null = null;
  private closed = false;
  private wakeSleep: (() => void) | null = null;

  /**
   * @param url the store's connection string (holds its password: never shown)
   * @param say where the two lines go
   * @param who how the process names itself in them ("worker", "run")
   */
  constructor(
    private readonly url: string,
    private readonly say: (line: string) => void,
    private readonly who: string,
  ) {}

  /** True while the server is known to be unreachable. */
  get unreachable(): boolean {
    return this.down !== null;
  }

  /**
   * Told of an error of the store or the queue: when the server cannot be reached, says so once and
   * resolves true once it is back; else (the server answers: the error was of another kind) says the
   * error and resolves false (false too once closed).
   */
  async failed(err: unknown): Promise<boolean> {
    if (this.closed) return false;
    const current = this.down;
    if (current) return current.then(() => !this.closed);
    const reached = await probe(this.url).then(
      () => true,
      () => false,
    );
    const meanwhile = this.down as Promise<void> | null;
    if (meanwhile) return meanwhile.then(() => !this.closed);
    if (reached) {
      this.say(scrub(`${this.who}: the queue: ${messageOf(err)}`, this.url));
      return false;
    }
    const began = Date.now();
    this.say(
      scrub(
        `${this.who}: the store ${redactUrl(this.url)} is unreachable (${messageOf(err)}); no new work is taken and nothing is sent until it is back; trying again in ${REACH_BACKOFF.firstMs / 1000} s, then doubling up to ${REACH_BACKOFF.maxMs / 1000} s`,
        this.url,
      ),
    );
    this.down = this.retry(began);
    await this.down;
    return !this.closed;
  }

  /** Stops trying (the process is closing); a wait for the server ends. */
  close(): void {
    this.closed = true;
    this.wakeSleep?.();
  }

  private async retry(began: number): Promise<void> {
    let wait: number = REACH_BACKOFF.firstMs;
    for (;;) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        this.wakeSleep = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wakeSleep = null;
      if (this.closed) break;
      const ok = await probe(this.url).then(
        () => true,
        () => false,
      );
      if (ok) {
        this.say(
          `${this.who}: the store ${redactUrl(this.url)} is reachable again after ${Math.round((Date.now() - began) / 1000)} s; work goes on`,
        );
        break;
      }
      wait = Math.min(wait * 2, REACH_BACKOFF.maxMs);
    }
    this.down = null;
  }
}
