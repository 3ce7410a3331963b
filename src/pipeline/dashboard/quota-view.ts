/**
 * The quota as the dashboard shows it: what the client's pacer and job governor have learned and hold
 * now (read as the metrics' gauges read them), and the 429s and retry waits it heard of through the
 * client's hooks.
 */
import { type GenpipeClient, RateLimitError, type RetryInfo } from '../../client/index.ts';

/** The quota line of the page (null figures: not learned yet). */
export interface DashboardQuota {
  /** The request window, as learned. */
  windowMs: number | null;
  /** Creates the service allows per window, as learned. */
  limit: number | null;
  /** Creates counted in the window now. */
  used: number;
  /** Jobs of this process at the service now. */
  jobs: number;
  /** Concurrent jobs allowed, as learned. */
  ceiling: number | null;
  /** Creates held back for the window or the ceiling now. */
  waiting: number;
  /** 429 answers retried after. */
  rateLimited: number;
  /** Retry waits of any call. */
  retries: number;
}

/** Reads a client's quota for the page (see the module comment). */
export class QuotaView {
  private client: Pick<GenpipeClient, 'pacer' | 'governor'> | null = null;
  private rateLimited = 0;
  private retries = 0;

  /** The client's hooks that count 429s and retry waits. */
  readonly hooks = {
    onRetry: (info: RetryInfo) => {
      this.retries += 1;
      if (info.error instanceof RateLimitError) this.rateLimited += 1;
    },
  };

  /** The client whose pacer and governor are read. */
  watch(client: Pick<GenpipeClient, 'pacer' | 'governor'>): void {
    this.client = client;
  }

  read(): DashboardQuota | null {
    const c = this.client;
    if (!c) return null;
    return {
      windowMs: c.pacer.windowMs,
      limit: c.pacer.limit,
      used: c.pacer.used,
      jobs: c.governor.activeCount,
      ceiling: c.governor.ceiling,
      waiting: c.pacer.waiting + c.governor.waiting,
      rateLimited: this.rateLimited,
      retries: this.retries,
    };
  }
}
