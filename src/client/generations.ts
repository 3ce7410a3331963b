/**
 * The generations resource: create (preflight, pacing, concurrency governor, safe retries, the 503
 * base64 fallback), get, wait, download and resubmit.
 */
import { randomUUID } from 'node:crypto';
import { LIMITS, TERMINAL_GENERATION_STATES } from '../spec/index.ts';
import type { ApiTransport } from './api-transport.ts';
import { lostIfSent } from './api-transport.ts';
import type { ConcurrencyGovernor, GovernorSlot } from './concurrency-governor.ts';
import { type DownloadedOutput, type DownloadOptions, downloadOutputs } from './download-outputs.ts';
import {
  CreateNotSentError,
  GenerationFailedError,
  LostResponseError,
  NotFoundError,
  RateLimitError,
  TimeoutError,
  UpstreamError,
} from './errors.ts';
import { GenerationPoller } from './generation-poller.ts';
import { type AttemptResponse, readSmallBody } from './http-attempt.ts';
import { inlineUrlMedia, type ReplayableBody, urlMediaPaths } from './inline-url-media.ts';
import { jobKindOf, RecentJobDurations } from './job-durations.ts';
import { linkedSignal } from './linked-signal.ts';
import type { PaceOutcome, Pacer, PaceTicket } from './pacer.ts';
import { type PollSettings, pollDelay } from './poll-schedule.ts';
import { preflightGeneration } from './preflight.ts';
import { notActedOn, type RetryPolicy, resubmitDelay } from './retry-policy.ts';
import { retryingCall } from './retrying-call.ts';
import type { SharedQuota } from './shared-quota.ts';
import { SharedSlots } from './shared-slots.ts';
import { sleep, throwIfAborted } from './sleep.ts';
import type { Generation, GenerationRequest } from './types.ts';

/** What the generations resource needs from its client. */
export interface GenerationsDeps {
  transport: ApiTransport;
  pacer: Pacer;
  governor: ConcurrencyGovernor;
  /** The quota shared with other processes on the same key, if any (shared-quota.ts). */
  sharedQuota?: SharedQuota | undefined;
  polling: PollSettings;
  resendUrlMediaAsBase64: boolean;
}

/** Options of create(). */
export interface CreateOptions {
  /** X-Request-Id to send (and to find the job by after a LostResponseError); a fresh UUID otherwise. */
  requestId?: string;
  /** Cancels everything: the waits and the request, even on the wire (it may then have been sent). */
  signal?: AbortSignal;
  /**
   * Cancels only the waits before the request is sent — held by the pacer or the governor, or between
   * retries — never a request on the wire (which then goes on to its answer). A create it cut throws
   * CreateNotSentError. A batch passes its "no new work" signal here.
   */
  holdSignal?: AbortSignal;
  /**
   * This create's retry budget instead of the client's (e.g. `{ maxRateLimitRetries: 19 }` to wait out
   * a rate limit rather than fail); delays stay the client's.
   */
  retry?: Partial<Pick<RetryPolicy, 'maxRetries' | 'maxRateLimitRetries'>>;
  /**
   * Awaited right before each attempt is written — after every wait (the governor's job slot, the
   * pacer's room, a retry's backoff), with the slot and the room already reserved for it — with the
   * request id the attempt carries. Nothing is sent until it resolves: a caller records its intent
   * here ("intent before action"). When it rejects, nothing is sent and create rejects with its error;
   * a holdSignal that fired while it ran still keeps the attempt from being sent (CreateNotSentError).
   */
  beforeSend?: (requestId: string) => Promise<void>;
  /**
   * Awaited after an attempt the service certainly did not act on (429, 502, 503, a connection that
   * failed before the request was written in full), before create waits to retry it or throws: the
   * intent beforeSend recorded may be withdrawn. Never after a lost answer (the job may exist).
   */
  nothingQueued?: (requestId: string) => Promise<void>;
  /**
   * The intent beforeSend records, for a client with a shared quota that can record it in the very
   * transaction that takes the create's request slot (SharedQuota.takeRequestSlot): then a slot is
   * never taken without the intent recorded. beforeSend is still awaited after it.
   */
  intent?: unknown;
}

/** The allowance a probing create is logged under in the shared window: any (it is only counted). */
const UNKNOWN_LIMIT = 1_000_000;

/** Options of wait(). */
export interface WaitOptions {
  signal?: AbortSignal;
  /** Give up (TimeoutError) after this long; no limit by default. */
  timeoutMs?: number;
  /** Called with the generation whenever its state changes (and with the first read). */
  onUpdate?: (generation: Generation) => void;
  /** First poll interval (2000 by default; not below the client's polling floor, 1000 by default). */
  pollIntervalMs?: number;
  /** Throw GenerationFailedError when the generation fails (default true); else return it. */
  throwOnFailure?: boolean;
  /**
   * The request the generation was created from: its kind (type, model, resolution, duration) times
   * the first read, from how long the client's earlier waits saw such jobs take (resubmit gives it).
   */
  request?: GenerationRequest;
}

/** Options of resubmit(). */
export interface ResubmitOptions extends Omit<WaitOptions, 'throwOnFailure'> {
  /** Creates at most, the first included (default 3). */
  maxAttempts?: number;
  /** An already failed generation of this request: counts as the first attempt. */
  failed?: Generation;
  /** Called after each failed attempt that will be resubmitted. */
  onResubmit?: (info: {
    attempt: number;
    error: GenerationFailedError;
    delayMs: number;
  }) => void | Promise<void>;
}

/** `o` without its undefined entries (so they do not override the client's policy). */
function definedOnly<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function isTerminal(state: string): boolean {
  return (TERMINAL_GENERATION_STATES as readonly string[]).includes(state);
}

/** The generations resource of a client. */
/** What the last concurrency 429 of a create taught (see createAttempts). */
interface Refusal {
  ceiling: number | null;
  jobsEnded: boolean;
}

export class Generations {
  /** How long jobs of each kind took, as this client's waits saw them end. */
  private readonly durations = new RecentJobDurations();
  /** The waits of the quota shared with other processes, when there is one. */
  private readonly shared: SharedSlots | null;

  constructor(private readonly deps: GenerationsDeps) {
    this.shared = deps.sharedQuota
      ? new SharedSlots({
          quota: deps.sharedQuota,
          recover: (signal) => this.recoverSharedJobSlots(signal ? { signal } : {}),
          log: deps.transport.settings.hooks.log,
        })
      : null;
  }

  /**
   * Creates a generation. The request is checked locally first (nothing is sent when the service would
   * answer 400/413/422), then paced under the request-rate window and the job ceiling, and retried only
   * when the service certainly did not queue it (429, 502, 503, a connection that failed before the
   * request was sent), always with the same request id: at most one job is ever made under it. A lost
   * response is never retried: it throws LostResponseError with the request id.
   *
   * @param request - the POST /v1/generations body
   * @param options.requestId - the X-Request-Id to send (the same on every retry)
   * @param options.signal - cancels waits and the request
   * @param options.holdSignal - cancels the waits before the request is sent, not the request
   * @param options.retry - this create's retry budget (maxRetries, maxRateLimitRetries)
   * @param options.beforeSend - awaited right before each attempt is written (record the intent)
   * @param options.nothingQueued - awaited after an attempt that certainly queued nothing
   * @returns the generation, in state queued
   * @throws PreflightError, the error class of the answer, LostResponseError, ConnectionError;
   *   CreateNotSentError when a signal cut it before it was sent; the signal's reason when it cut the
   *   request on the wire (it may have been sent)
   * @example const gen = await client.generations.create({ type: 'image', prompt: 'a red fox' });
   */
  async create(request: GenerationRequest, options: CreateOptions = {}): Promise<Generation> {
    await preflightGeneration(request, this.deps.transport.secrets);
    const requestId = options.requestId ?? randomUUID();
    const { signal, holdSignal } = options;
    // The waits follow both signals; the request on the wire only `signal`.
    const held = linkedSignal(signal, holdSignal);
    /** False until an attempt was given to the transport, and again after one that queued nothing. */
    const wire = { maybeSent: false };
    try {
      return await this.createAttempts(request, requestId, options, held.signal, wire);
    } catch (err) {
      const cutBy = [signal, holdSignal].find((s) => s?.aborted && s.reason === err);
      if (cutBy && !wire.maybeSent) throw new CreateNotSentError('POST /v1/generations', requestId, err);
      throw err;
    } finally {
      held.release();
    }
  }

  /** create()'s retry loop: `held` cuts the waits, `options.signal` the attempts too. */
  private async createAttempts(
    request: GenerationRequest,
    requestId: string,
    options: CreateOptions,
    held: AbortSignal | undefined,
    wire: { maybeSent: boolean },
  ): Promise<Generation> {
    const { transport, pacer, governor } = this.deps;
    const { signal } = options;
    const url = transport.url('agents', '/v1/generations');
    const what = 'POST /v1/generations';
    let body: string | ReplayableBody = JSON.stringify(request);
    let holdMs: number | undefined;
    /**
     * The key's job ceiling the shared quota learned from this create's last 429, if any; and whether
     * reading our jobs after that 429 found some of them ended (their slots are free: no hold).
     */
    const shared: Refusal = { ceiling: null, jobsEnded: false };
    try {
      return await retryingCall({
        what,
        retryClass: 'create',
        policy: { ...transport.settings.policy, ...definedOnly(options.retry) },
        signal,
        requestId,
        hooks: transport.settings.hooks,
        random: transport.settings.random,
        run: async () => {
          const slot = await governor.acquire({ signal: held, holdMs });
          holdMs = undefined;
          let ticket: PaceTicket;
          try {
            const known = await this.shared?.jobSlot(requestId, held);
            if (known != null) governor.adoptCeiling(known);
          } catch (err) {
            slot.done('none');
            throw err;
          }
          try {
            ticket = await pacer.acquire(held);
          } catch (err) {
            slot.done('none');
            await this.shared?.notStarted(requestId, null).catch(() => null);
            throw err;
          }
          try {
            await this.takeSharedSlot(requestId, held, options.intent);
            await options.beforeSend?.(requestId);
            throwIfAborted(signal);
            throwIfAborted(options.holdSignal);
          } catch (err) {
            ticket.done('not-sent');
            slot.done('none');
            await this.shared?.notStarted(requestId, null).catch(() => null);
            throw err;
          }
          wire.maybeSent = true;
          try {
            shared.ceiling = null;
            shared.jobsEnded = false;
            return await this.sendCreate(url, requestId, body, signal, slot, ticket, shared);
          } catch (err) {
            wire.maybeSent = !notActedOn(err);
            if (!wire.maybeSent) await options.nothingQueued?.(requestId);
            throw err;
          } finally {
            if (wire.maybeSent) await this.shared?.quota.requestAnswered?.(requestId).catch(() => null);
          }
        },
        whenText: (err, delayMs) => {
          if (!(err instanceof RateLimitError)) return undefined;
          if (err.kind === 'rpm')
            return `once the request window has room (within ${Math.ceil(delayMs / 1000)} s)`;
          if (err.kind === 'concurrency' && shared.jobsEnded)
            return "as the job ceiling allows: some of this client's jobs had ended unread";
          const active = governor.activeCount;
          if (err.kind !== 'concurrency' || governor.ceiling === null || active === 0) return undefined;
          return `when one of this client's ${active} running jobs ends (the service's job ceiling)`;
        },
        wait: async (err, delayMs) => {
          if (err instanceof RateLimitError && err.kind === 'rpm') return; // the pacer holds until Retry-After
          if (err instanceof RateLimitError && err.kind === 'concurrency') {
            // With the key's ceiling shared, held by the shared quota until the key's jobs are below
            // it. Else held by the governor until one of our jobs ends (or Retry-After passes when it
            // learned no ceiling because none of ours was running).
            if (shared.ceiling !== null) return;
            if (shared.jobsEnded) return;
            if (governor.ceiling === null || governor.activeCount === 0) holdMs = delayMs;
            return;
          }
          if (
            err instanceof UpstreamError &&
            err.status === 503 &&
            this.deps.resendUrlMediaAsBase64 &&
            typeof body === 'string' &&
            urlMediaPaths(request).length > 0
          ) {
            // "Retry or send base64 instead of URL": resend at once with the media inline.
            transport.settings.hooks.log?.(`${what}: resending url media as base64 after 503`);
            body = await inlineUrlMedia(request, transport.settings.dispatcher, {
              signal: held,
              timeoutMs: transport.settings.timeoutMs,
              userAgent: transport.settings.userAgent,
            });
            return;
          }
          await sleep(delayMs, held);
        },
      });
    } finally {
      const sent = body as string | ReplayableBody;
      if (typeof sent !== 'string') await sent.dispose();
    }
  }

  /**
   * Waits for a slot in the window shared with other processes on the key (when the client has a
   * shared quota), recording the caller's intent with it when the quota can.
   */
  private async takeSharedSlot(
    requestId: string,
    held: AbortSignal | undefined,
    intent: unknown,
  ): Promise<void> {
    const { pacer } = this.deps;
    if (!this.shared) return;
    // The upper bound of the window: the shared log may stamp a create when its slot was taken.
    const windowMs = pacer.windowUpperMs;
    const limit = pacer.limit;
    // While the window is unknown (the client's first create probes it) the request is logged all
    // the same, in the interface's window, so the other processes count it.
    const bounds = pacer.windowBounds;
    const window =
      windowMs === null || limit === null
        ? { windowMs: LIMITS.rateWindowSeconds * 1000, limit: UNKNOWN_LIMIT }
        : { windowMs, limit, ...(bounds ? { loMs: bounds.loMs } : {}) };
    // The key's processes pace by the tightest bounds any of them learned: this one too.
    await this.shared.requestSlot(requestId, window, intent, held, (b) => pacer.adoptWindow(b));
  }

  /**
   * Frees the shared job slots whose job has ended — those a process that died or lost its answers
   * left behind: each held job is read (get), which frees its slot when it is terminal or unknown to
   * the service. A job still running keeps its slot. Returns how many slots were freed.
   */
  async recoverSharedJobSlots(options: { signal?: AbortSignal } = {}): Promise<number> {
    const shared = this.shared;
    if (!shared) return 0;
    let freed = 0;
    for (const id of await shared.quota.heldJobs()) {
      try {
        if (isTerminal((await this.get(id, options)).state)) freed++;
      } catch (err) {
        if (err instanceof NotFoundError) freed++;
        else throw err;
      }
    }
    return freed;
  }

  /** Frees the shared job slot of a generation read terminal. */
  private async sharedJobSeen(generation: { id: string; state: string }): Promise<void> {
    if (!this.shared || !(TERMINAL_GENERATION_STATES as readonly string[]).includes(generation.state)) return;
    await this.shared.ended(generation.id);
  }

  /** One create attempt with its governor slot and pacer ticket; settles both exactly once. */
  private async sendCreate(
    url: string,
    requestId: string,
    body: string | ReplayableBody,
    signal: AbortSignal | undefined,
    slot: GovernorSlot,
    ticket: PaceTicket,
    shared: Refusal,
  ): Promise<Generation> {
    const { transport } = this.deps;
    const what = 'POST /v1/generations';
    const headers = transport.headers('agents', requestId);
    headers['content-type'] = 'application/json';
    if (typeof body !== 'string') headers['content-length'] = String(body.length);
    let res: AttemptResponse;
    try {
      res = await transport.attempt({
        method: 'POST',
        url,
        headers,
        body: typeof body === 'string' ? body : body.open(),
        signal,
      });
    } catch (err) {
      const mapped = lostIfSent(err, what, requestId);
      ticket.done(mapped instanceof LostResponseError ? 'unknown' : 'not-sent');
      slot.done('none');
      // A lost answer keeps its reservation (the job may run); it is forgotten after a while.
      if (!(mapped instanceof LostResponseError))
        await this.shared?.notStarted(requestId, null).catch(() => null);
      throw mapped;
    }
    if (res.status === 201) {
      let generation: Generation;
      try {
        generation = (await readSmallBody(res)) as Generation;
      } catch (err) {
        ticket.done({ status: 201, headers: res.headers });
        slot.done('none');
        throw new LostResponseError(what, requestId, err);
      }
      ticket.done({ status: 201, headers: res.headers });
      slot.done({ created: generation.id });
      await this.shared?.started(generation.id, requestId);
      return generation;
    }
    const error = await transport.error(res, requestId);
    const outcome: PaceOutcome = {
      status: res.status,
      headers: res.headers,
      retryAfterMs: error.retryAfterMs,
    };
    ticket.done(outcome);
    const refused = error instanceof RateLimitError && error.kind === 'concurrency' ? 'concurrency' : null;
    // An answer other than 201 made no job (a 5xx other than 502/503 might have: its reservation stays).
    const noJob = notActedOn(error) || res.status < 500;
    const ceiling =
      this.shared && noJob ? await this.shared.notStarted(requestId, refused).catch(() => null) : null;
    if (refused) shared.ceiling = ceiling;
    if (refused && ceiling === null) shared.jobsEnded = await this.readActiveJobs(signal);
    slot.done(
      refused
        ? {
            rejected: 'concurrency',
            retryAfterMs: error.retryAfterMs,
            ...(ceiling !== null ? { ceiling } : { jobsEnded: shared.jobsEnded }),
          }
        : 'none',
    );
    throw error;
  }

  /**
   * Reads every job of ours not yet seen ending, at once, after "Too many concurrent jobs": those still
   * running are the ceiling the governor learns (those that ended unread would overstate it). A read
   * that fails tells nothing, and is left to the wait loops.
   * @returns true when some had ended (their slots are free now)
   */
  private async readActiveJobs(signal: AbortSignal | undefined): Promise<boolean> {
    const ids = this.deps.governor.activeIds();
    const read = await Promise.all(
      ids.map((id) => this.get(id, signal ? { signal } : {}).catch((err) => err instanceof NotFoundError)),
    );
    return read.some((g) => g === true || (typeof g === 'object' && g !== null && isTerminal(g.state)));
  }

  /**
   * Reads a generation (fresh output URLs on every read). A terminal state frees its slot in the
   * concurrency governor.
   * @throws NotFoundError for an unknown id
   */
  async get(id: string, options: { signal?: AbortSignal } = {}): Promise<Generation> {
    const sentAt = Date.now();
    try {
      const { body } = await this.deps.transport.json<Generation>({
        surface: 'agents',
        method: 'GET',
        path: `/v1/generations/${encodeURIComponent(id)}`,
        signal: options.signal,
      });
      this.deps.governor.observe(body, sentAt);
      await this.sharedJobSeen(body);
      return body;
    } catch (err) {
      if (err instanceof NotFoundError) {
        this.deps.governor.forget(id);
        await this.shared?.ended(id);
      }
      throw err;
    }
  }

  /**
   * Polls a generation until it completes or fails, every 2–5 s with jitter by default.
   *
   * @param generation - an id, or a generation (a non-terminal one is first waited on, not re-read)
   * @returns the completed generation (or the failed one with throwOnFailure: false)
   * @throws GenerationFailedError (failure_code, retryable), TimeoutError after timeoutMs
   * @example const done = await client.generations.wait(gen, { onUpdate: (g) => console.log(g.state) });
   */
  async wait(generation: string | Generation, options: WaitOptions = {}): Promise<Generation> {
    const { signal } = options;
    const id = typeof generation === 'string' ? generation : generation.id;
    const settings = { ...this.deps.polling };
    if (options.pollIntervalMs !== undefined) settings.intervalMs = options.pollIntervalMs;
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    const random = this.deps.transport.settings.random;
    const timeout = new AbortController();
    let lastState: string | null = null;
    /** Every generation seen: onUpdate on a change of state; past the deadline, the wait ends. */
    const seen = (current: Generation): void => {
      if (current.state !== lastState) {
        lastState = current.state;
        options.onUpdate?.(current);
      }
      if (!isTerminal(current.state) && deadline - Date.now() <= 0) {
        timeout.abort(
          new TimeoutError(`Generation ${id} did not finish within ${options.timeoutMs} ms`, {
            detail: `last state: ${current.state}`,
          }),
        );
      }
    };
    let done: Generation;
    if (typeof generation !== 'string') {
      seen(generation);
      timeout.signal.throwIfAborted();
    }
    if (typeof generation !== 'string' && isTerminal(generation.state)) {
      done = generation;
    } else {
      // The client's poll loop, for this one job: no rate cap, the growing jittered interval (never
      // past the deadline), a read refused with 429 after the retries thrown as it was. A generation
      // given (not an id) is timed from its created_at, the service's only timing hint.
      const poller = new GenerationPoller({
        get: (gid, o) => this.get(gid, o),
        intervalMs: (n) => Math.min(Math.max(0, deadline - Date.now()), pollDelay(n, settings, random)),
        schedule: settings.schedule,
        minIntervalMs: Math.max(settings.floorMs, Math.min(1_000, settings.intervalMs)),
        durations: this.durations,
        maxGetsPerSecond: Number.POSITIVE_INFINITY,
        rateLimitedReads: 'fail',
        ...(signal ? { signal } : {}),
      });
      const createdAt = typeof generation === 'string' ? Number.NaN : Date.parse(generation.created_at);
      try {
        done = await poller.wait(id, {
          signal: timeout.signal,
          readNow: typeof generation === 'string',
          onRead: seen,
          ...(options.request ? { kind: jobKindOf(options.request) } : {}),
          ...(Number.isFinite(createdAt) ? { createdAt } : {}),
        });
      } finally {
        poller.close();
      }
    }
    this.deps.governor.observe(done);
    await this.sharedJobSeen(done);
    if (done.state === 'failed' && options.throwOnFailure !== false) throw new GenerationFailedError(done);
    return done;
  }

  /**
   * Downloads every output of a completed generation into `dir` (see downloadOutputs): each to
   * `<name>.part`, renamed when complete; an expired URL (403) is refreshed by reading the generation
   * again; an interrupted transfer resumes with Range when the server supports it.
   *
   * @param generation - a completed generation, or its id
   * @param dir - the target directory (created when missing)
   */
  async download(
    generation: string | Generation,
    dir: string,
    options: DownloadOptions = {},
  ): Promise<DownloadedOutput[]> {
    const current = typeof generation === 'string' ? await this.get(generation, options) : generation;
    return downloadOutputs(
      {
        transport: this.deps.transport,
        refresh: () => this.get(current.id, options),
      },
      current,
      dir,
      options,
    );
  }

  /**
   * The wait before creating a generation again after its `attempt`-th create failed with a retryable
   * failure_code (the client's resubmit range with backoff; see resubmitDelay in retry-policy.ts).
   *
   * @example await sleep(client.generations.resubmitDelay(1), signal); // 2–4 s by default
   */
  resubmitDelay(attempt: number): number {
    const { policy, random } = this.deps.transport.settings;
    return resubmitDelay(attempt, policy, random);
  }

  /**
   * Creates a generation and waits for it; when it fails with a retryable failure_code
   * (generation_failed, output_not_found, rate_limited) it is created again — as a new job with a new
   * request id — after a backoff, up to `maxAttempts` creates in all. Non-retryable failures are thrown
   * at once.
   *
   * @param request - the POST /v1/generations body
   * @param options.maxAttempts - creates at most (default 3)
   * @param options.failed - a generation of this request that already failed (the first attempt)
   * @returns the completed generation
   * @throws GenerationFailedError of the last attempt
   */
  async resubmit(request: GenerationRequest, options: ResubmitOptions = {}): Promise<Generation> {
    const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
    let attempt = 0;
    let failure: GenerationFailedError | null = options.failed
      ? new GenerationFailedError(options.failed)
      : null;
    if (failure) attempt = 1;
    for (;;) {
      if (failure) {
        if (!failure.retryable || attempt >= maxAttempts) throw failure;
        const delayMs = this.resubmitDelay(attempt);
        await options.onResubmit?.({ attempt, error: failure, delayMs });
        await sleep(delayMs, options.signal);
      }
      attempt++;
      const created = await this.create(request, options.signal ? { signal: options.signal } : {});
      try {
        return await this.wait(created, { ...options, request, throwOnFailure: true });
      } catch (err) {
        if (!(err instanceof GenerationFailedError)) throw err;
        failure = err;
      }
    }
  }
}
