/** The per-client concurrent-job ceiling: a job counts from submission until completed or failed. */
import { concurrencyRejectedHeaders, LIMITS, RATE_LIMIT_DETAILS } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { HttpError } from '../http-error.ts';
import type { ClientRec } from '../store.ts';

/** Forgets active jobs tracked for longer than the interface's hour, as the service does. */
export function pruneActiveJobs(client: ClientRec, now: number): void {
  const maxAge = LIMITS.activeJobPruneSeconds * 1000;
  for (const [id, since] of client.activeJobs) {
    if (now - since >= maxAge) client.activeJobs.delete(id);
  }
}

/**
 * Rejects a create when the client already has `concurrency` active jobs (excess requests are
 * rejected, not queued).
 * @throws HttpError 429 `Too many concurrent jobs` with only Retry-After: 60 (kind concurrency)
 */
export function checkConcurrency(_ctx: EmulatorContext, client: ClientRec, now: number): void {
  pruneActiveJobs(client, now);
  if (client.activeJobs.size >= client.concurrency) {
    throw new HttpError(429, RATE_LIMIT_DETAILS.concurrency, concurrencyRejectedHeaders(), 'concurrency');
  }
}

/** Tracks a new job as active from `now`. */
export function addActiveJob(client: ClientRec, generationId: string, now: number): void {
  client.activeJobs.set(generationId, now);
}

/** Stops tracking a job that reached a terminal state. */
export function removeActiveJob(client: ClientRec, generationId: string): void {
  client.activeJobs.delete(generationId);
}
