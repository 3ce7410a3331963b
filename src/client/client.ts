/**
 * createClient: one object holding the HTTP connection pool, the retry policy, the pacer and the
 * concurrency governor, shared by its three resources (files, generations, legacy).
 */
import { Agent, type Dispatcher } from 'undici';
import { API_KEY_PREFIX, CHOICES } from '../spec/index.ts';
import { ApiTransport } from './api-transport.ts';
import { ConcurrencyGovernor } from './concurrency-governor.ts';
import { EmulatorMedia } from './emulator-media.ts';
import { Files } from './files.ts';
import { Generations } from './generations.ts';
import { Legacy } from './legacy.ts';
import { Pacer } from './pacer.ts';
import { type PollSettings, pollSettingsOf } from './poll-schedule.ts';
import { resolveRetryPolicy } from './retry-policy.ts';
import type { ClientHooks } from './retrying-call.ts';
import type { SharedQuota } from './shared-quota.ts';

/** Options of createClient. Only apiKey and baseUrl are required. */
export interface ClientOptions {
  /** Agents-surface key, `svc-api-...`. Never logged, never in an error. */
  apiKey: string;
  /** Agents base URL without /v1, e.g. http://127.0.0.1:4010 (paths start with /v1). */
  baseUrl: string;
  /** Legacy base URL including its base path, e.g. http://127.0.0.1:4010/dream-machine/v1. */
  legacyBaseUrl?: string;
  /** Bearer token of the legacy surface (defaults to apiKey). */
  legacyToken?: string;
  /** Longest wait for an answer's headers, and between two body chunks (default 60 s). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** Retry delays and counts; see DEFAULT_RETRY_POLICY. */
  retry?: Parameters<typeof resolveRetryPolicy>[0];
  /**
   * The service's sliding rate window in ms, when known in advance; by default it is learned from the
   * X-RateLimit-Reset of the creates' answers.
   */
  rateWindowMs?: number;
  /** Creates allowed per window when known in advance; learned from X-RateLimit-Limit otherwise. */
  rateLimit?: number;
  /** A cap on this client's concurrent jobs; learned from "Too many concurrent jobs" otherwise. */
  maxConcurrentJobs?: number;
  /**
   * A quota shared with other processes on the same API key (e.g. the PostgreSQL one of
   * pipeline/distributed/shared-quota-pg.ts); without it the client paces by what it learns alone.
   */
  sharedQuota?: SharedQuota;
  /** On a 503 for a create with url media, fetch the media and resend it as base64 (default false). */
  resendUrlMediaAsBase64?: boolean;
  /** Largest file sent inline by files.upload in auto mode (default CHOICES.inlineUploadMaxBytes). */
  inlineUploadMaxBytes?: number;
  /** Polling of wait(); see DEFAULT_POLL_SETTINGS (floorMs is a test-only knob). */
  polling?: Partial<PollSettings>;
  /** Retry and log hooks (the CLI prints them; tests use onRetry). */
  hooks?: ClientHooks;
  /** Sent as User-Agent. */
  userAgent?: string;
  /** An undici dispatcher to use instead of the client's own Agent (not closed by close()). */
  dispatcher?: Dispatcher;
  /** Random source in [0, 1) for jitter (tests). */
  random?: () => number;
}

/** A client of both surfaces. */
export interface GenpipeClient {
  files: Files;
  generations: Generations;
  legacy: Legacy;
  /** The emulator's media store (genpipe serve only): local bytes as a URL for the legacy surface. */
  emulatorMedia: EmulatorMedia;
  /** The shared request-rate pacer (read its `limit`, `windowMs` and `used`). */
  pacer: Pacer;
  /** The shared concurrency governor (read its `ceiling`, `activeCount`, `waiting`). */
  governor: ConcurrencyGovernor;
  /** Closes the connection pool. */
  close(): Promise<void>;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** Whether `url` is an absolute http(s) URL (`alice:pw@host` parses, as a URL of scheme `alice:`). */
function isHttpUrl(url: unknown): boolean {
  if (typeof url !== 'string' || !URL.canParse(url)) return false;
  const { protocol } = new URL(url);
  return protocol === 'http:' || protocol === 'https:';
}

/**
 * Creates a client.
 *
 * @param options - see ClientOptions; apiKey and baseUrl are required
 * @throws TypeError when apiKey or baseUrl is missing or malformed (the message never shows the key)
 * @example
 * const client = createClient({ apiKey: process.env.GENPIPE_API_KEY!, baseUrl: 'http://127.0.0.1:4010' });
 * const gen = await client.generations.create({ type: 'image', prompt: 'a red fox' });
 * const done = await client.generations.wait(gen);
 * await client.generations.download(done, './out');
 * await client.close();
 */
export function createClient(options: ClientOptions): GenpipeClient {
  if (typeof options.apiKey !== 'string' || !options.apiKey.startsWith(API_KEY_PREFIX)) {
    throw new TypeError(`Expected an API key starting with '${API_KEY_PREFIX}' for apiKey`);
  }
  if (!isHttpUrl(options.baseUrl)) {
    throw new TypeError('Expected an absolute http(s) URL for baseUrl');
  }
  if (options.legacyBaseUrl !== undefined && !isHttpUrl(options.legacyBaseUrl)) {
    throw new TypeError('Expected an absolute http(s) URL for legacyBaseUrl');
  }
  const ownAgent = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? new Agent({ connections: 32, connect: { timeout: 10_000 } });
  const hooks = options.hooks ?? {};
  const policy = resolveRetryPolicy(options.retry, options.maxRetries);
  const polling: PollSettings = pollSettingsOf(options.polling);
  const transport = new ApiTransport({
    dispatcher,
    baseUrl: trimSlash(options.baseUrl),
    legacyBaseUrl: options.legacyBaseUrl ? trimSlash(options.legacyBaseUrl) : null,
    apiKey: options.apiKey,
    legacyToken: options.legacyToken ?? options.apiKey,
    timeoutMs: options.timeoutMs ?? 60_000,
    policy,
    hooks,
    userAgent: options.userAgent ?? 'genpipe-client/0.1',
    random: options.random ?? Math.random,
  });
  const pacer = new Pacer({
    windowMs: options.rateWindowMs ?? null,
    limit: options.rateLimit ?? null,
    // A shared quota's request log counts every process's creates on the key, exactly.
    othersCounted: options.sharedQuota !== undefined,
    log: hooks.log,
  });
  const governor = new ConcurrencyGovernor({
    maxConcurrentJobs: options.maxConcurrentJobs ?? null,
    // A shared quota runs the slow start for every process on the key (SharedQuota.reserveJobSlot).
    slowStart: options.sharedQuota === undefined,
    log: hooks.log,
  });
  return {
    files: new Files({
      transport,
      polling,
      inlineMaxBytes: options.inlineUploadMaxBytes ?? CHOICES.inlineUploadMaxBytes,
    }),
    generations: new Generations({
      transport,
      pacer,
      governor,
      sharedQuota: options.sharedQuota,
      polling,
      resendUrlMediaAsBase64: options.resendUrlMediaAsBase64 ?? false,
    }),
    legacy: new Legacy({ transport, polling }),
    emulatorMedia: new EmulatorMedia(transport),
    pacer,
    governor,
    async close() {
      governor.close();
      if (ownAgent) await dispatcher.close();
    },
  };
}
