/**
 * A batch's Prometheus metrics on a registry of their own (never prom-client's global one), fed from
 * what the batch and its client already tell: the batch's events (items by state, finished items,
 * creates), the client's hooks (429s by kind from its retries, bytes uploaded and downloaded), its
 * pacer and governor read at each scrape (quota used), and the poll loop's duration model (how late a
 * job's end was noticed). Plus Node's default process metrics. No label holds a secret: labels are
 * states, outcomes and kinds, never a key, a URL or a file name.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import {
  type ClientHooks,
  type GenpipeClient,
  type JobDurations,
  RateLimitError,
  type RetryInfo,
  type TransferInfo,
} from '../../client/index.ts';
import type { EventSink, PipelineEvent } from '../events.ts';
import { FINAL_ITEM_STATES, ITEM_STATES, type ItemState } from '../item.ts';
import { applyEvent, newProgressState } from '../progress/progress-state.ts';
import { BatchHealth } from './batch-health.ts';

/** The kinds of 429 counted: the request rate, concurrent jobs, any other (the API-wide ceiling). */
export const RATE_LIMITED_KINDS = ['rate', 'concurrency', 'other'] as const;
export type RateLimitedKind = (typeof RATE_LIMITED_KINDS)[number];

/** The outcomes of a finished item. */
const OUTCOMES: Partial<Record<ItemState, string>> = {
  reported: 'succeeded',
  failed: 'failed',
  skipped: 'skipped',
  stopped: 'unprocessed',
};

/** Upper bounds of the poll lag histogram, in seconds. */
export const POLL_LAG_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60];

/** A batch's metrics and what feeds them. */
export interface GenpipeMetrics {
  /** Every metric, genpipe's and the process's. */
  readonly registry: Registry;
  /** Every event of the batch (items, creates, the batch's state for /healthz). */
  readonly sink: EventSink;
  /** Merged into the client's hooks: its retries (429s by kind) and transfers (bytes). */
  readonly clientHooks: Required<Pick<ClientHooks, 'onRetry' | 'onTransfer'>>;
  /** What /healthz answers. */
  readonly health: BatchHealth;
  /** The client whose pacer and governor the quota gauges read at each scrape. */
  watchClient(client: Pick<GenpipeClient, 'pacer' | 'governor'>): void;
  /** `durations` as the poll loop uses it, timing how late each job's end was noticed too. */
  observeDurations(durations: JobDurations): JobDurations;
}

/** The kind of a 429, as the metrics label it. */
export function rateLimitedKind(err: RateLimitError): RateLimitedKind {
  if (err.kind === 'rpm') return 'rate';
  if (err.kind === 'concurrency') return 'concurrency';
  return 'other';
}

/**
 * A fresh registry with genpipe's metrics (see docs/metrics.md) and the process's defaults.
 *
 * @example
 * const metrics = createMetrics();
 * const client = createClient({ ...options, hooks: { ...hooks, ...metrics.clientHooks } });
 * metrics.watchClient(client);
 * startBatch({ ...options, onEvent: metrics.sink });
 * const server = await startMetricsServer({ port: 0, registry: metrics.registry, health: metrics.health });
 */
export function createMetrics(): GenpipeMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const health = new BatchHealth();
  const items = newProgressState();
  const onEvent = eventMetrics(registry);
  let client: Pick<GenpipeClient, 'pacer' | 'governor'> | null = null;

  new Gauge({
    name: 'genpipe_items',
    help: 'Items of the batch by the state they are in now (final states included)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const counts = new Map<ItemState, number>(ITEM_STATES.map((s) => [s, 0]));
      for (const s of [...items.items.values(), ...items.unplaced.values()]) {
        counts.set(s, (counts.get(s) ?? 0) + 1);
      }
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  const rateLimited = new Counter({
    name: 'genpipe_rate_limited_total',
    help: '429 answers the client retried after, by kind: rate (requests per window), concurrency (concurrent jobs), other (API-wide ceiling)',
    labelNames: ['kind'],
    registers: [registry],
  });
  for (const kind of RATE_LIMITED_KINDS) rateLimited.inc({ kind }, 0);
  const uploaded = new Counter({
    name: 'genpipe_upload_bytes_total',
    help: 'Bytes of the files uploaded to the service',
    registers: [registry],
  });
  const downloaded = new Counter({
    name: 'genpipe_download_bytes_total',
    help: 'Bytes of the outputs downloaded in full',
    registers: [registry],
  });
  quotaGauges(registry, () => client);
  const pollLag = new Histogram({
    name: 'genpipe_poll_lag_seconds',
    help: 'How late a job end was noticed at most: from the last read that found the job running (or its create) to the read that found it ended',
    buckets: POLL_LAG_BUCKETS,
    registers: [registry],
  });

  return {
    registry,
    health,
    sink: (event) => {
      applyEvent(items, event);
      health.observe(event);
      onEvent(event);
    },
    clientHooks: {
      onRetry: (info: RetryInfo) => {
        if (info.error instanceof RateLimitError) rateLimited.inc({ kind: rateLimitedKind(info.error) });
      },
      onTransfer: (info: TransferInfo) => {
        (info.direction === 'upload' ? uploaded : downloaded).inc(info.bytes);
      },
    },
    watchClient: (c) => {
      client = c;
    },
    observeDurations: (durations) => ({
      expectedMs: (kind) => durations.expectedMs(kind),
      record: (kind, sample) => {
        pollLag.observe(Math.max(0, sample.doneByMs - sample.runningAtMs) / 1000);
        durations.record(kind, sample);
      },
    }),
  };
}

/** The counters fed by events alone: creates, finished items by outcome. */
function eventMetrics(registry: Registry): (event: PipelineEvent) => void {
  const creates = new Counter({
    name: 'genpipe_creates_total',
    help: 'Generations created by this process (each create the service answered with a generation)',
    registers: [registry],
  });
  const finished = new Counter({
    name: 'genpipe_items_finished_total',
    help: 'Items this process took to a final state, by outcome (items reported as an earlier run left them are not counted)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of Object.values(OUTCOMES)) finished.inc({ outcome }, 0);
  return (event) => {
    if (event.type !== 'item_state') return;
    // A generation the journal resumed was created by an earlier run: its event comes from plan.
    if (event.state === 'submitted' && event.stage === 'submit') creates.inc();
    const outcome = OUTCOMES[event.state];
    if (outcome && FINAL_ITEM_STATES.includes(event.state) && !event.from_journal) finished.inc({ outcome });
  };
}

/** The quota gauges, read from the client's pacer and governor at each scrape (0 or NaN before it is known). */
function quotaGauges(
  registry: Registry,
  client: () => Pick<GenpipeClient, 'pacer' | 'governor'> | null,
): void {
  const gauge = (
    name: string,
    help: string,
    read: (c: Pick<GenpipeClient, 'pacer' | 'governor'>) => number,
  ) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const c = client();
        this.set(c ? read(c) : 0);
      },
    });
  gauge(
    'genpipe_quota_requests_in_window',
    'Creates counted in the service request window now (with those whose answer is pending)',
    (c) => c.pacer.used,
  );
  gauge(
    'genpipe_quota_request_limit',
    'Creates the service allows per request window, as learned (NaN until known)',
    (c) => c.pacer.limit ?? Number.NaN,
  );
  gauge(
    'genpipe_jobs_in_flight',
    'Jobs of this process the service is running (created, not seen ended)',
    (c) => c.governor.activeCount,
  );
  gauge(
    'genpipe_jobs_ceiling',
    'Concurrent jobs the service allows this key, as learned (NaN until known)',
    (c) => c.governor.ceiling ?? Number.NaN,
  );
  gauge(
    'genpipe_creates_waiting',
    'Creates held back by the client for the request window or the job ceiling',
    (c) => c.pacer.waiting + c.governor.waiting,
  );
}
