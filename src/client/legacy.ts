/**
 * The legacy surface ({legacyBaseUrl}, e.g. http://host/dream-machine/v1): the creates (video, image,
 * modify, reframe, upscale, add audio), reading, listing and deleting a generation, waiting for it and
 * downloading its assets, the concepts, credits and ping. Every create is checked locally first and is
 * a paid job, so it follows the create retry rules (no resend after a lost response); the calls live
 * in legacy/calls.ts. Callbacks are received by callback-receiver.ts.
 */
import { randomUUID } from 'node:crypto';
import type { LegacyCreateKind } from '../spec/index.ts';
import type { ApiTransport } from './api-transport.ts';
import { type DownloadedOutput, type DownloadOptions, downloadOutputs } from './download-outputs.ts';
import { GenerationFailedError, GenpipeError, TimeoutError } from './errors.ts';
import { createLegacy, deleteLegacy, legacyReads, listLegacy } from './legacy/calls.ts';
import type {
  LegacyAudioInput,
  LegacyCreateOptions,
  LegacyCredits,
  LegacyGenerationList,
  LegacyImageInput,
  LegacyReframeImageInput,
  LegacyReframeVideoInput,
  LegacyUpscaleInput,
  LegacyVideoInput,
} from './legacy/inputs.ts';
import { type PollSettings, pollDelay } from './poll-schedule.ts';
import { preflightModify } from './preflight.ts';
import { sleep } from './sleep.ts';
import type { Generation, GenerationOutput, LegacyGeneration, ModifyVideoInput } from './types.ts';

/** What the legacy resource needs from its client. */
export interface LegacyDeps {
  transport: ApiTransport;
  polling: PollSettings;
}

const TERMINAL = ['completed', 'failed'];

/**
 * A legacy generation as the agents surface's Generation the poll loop and the download code read: its
 * assets as the output list (video first, then image), `dreaming` as processing, no failure_code (the
 * legacy surface has none).
 */
export function legacyAsGeneration(g: LegacyGeneration): Generation {
  const output: GenerationOutput[] = [];
  if (g.assets?.video) output.push({ type: 'video', url: g.assets.video, layer: null });
  if (g.assets?.image) output.push({ type: 'image', url: g.assets.image, layer: null });
  return {
    id: g.id,
    type: 'video_edit',
    state: g.state === 'completed' ? 'completed' : g.state === 'failed' ? 'failed' : 'processing',
    model: g.model,
    created_at: g.created_at,
    output,
    failure_reason: g.failure_reason,
    failure_code: null,
  };
}

/** The legacy surface of a client. */
export class Legacy {
  constructor(private readonly deps: LegacyDeps) {}

  /**
   * Starts a modify-video generation. Checked locally first (PreflightError 400 with the service's
   * detail, nothing sent).
   *
   * @param request - ModifyVideoRequest: media.url, model (ray-2, ray-flash-2), mode, optional
   *   first_frame, prompt, callback_url
   * @param options.requestId - X-Request-Id to send (fresh UUID by default)
   * @returns the generation (queued)
   * @throws PreflightError, the error class of the answer, LostResponseError
   * @example await client.legacy.modifyVideo({ media: { url }, model: 'ray-2', mode: 'flex_1' })
   */
  async modifyVideo(
    request: ModifyVideoInput,
    options: { requestId?: string; signal?: AbortSignal } = {},
  ): Promise<LegacyGeneration> {
    const { request: body } = preflightModify(request, this.deps.transport.secrets);
    const { body: generation } = await this.deps.transport.json<LegacyGeneration>({
      surface: 'legacy',
      method: 'POST',
      path: '/generations/video/modify',
      json: body,
      retryClass: 'create',
      requestId: options.requestId ?? randomUUID(),
      signal: options.signal,
    });
    return generation;
  }

  /**
   * Starts a video (prompt, keyframes, concepts...). Checked locally first (PreflightError 400, nothing
   * sent). @example await client.legacy.createVideo({ prompt: 'a lighthouse', duration: '5s' })
   */
  createVideo(request: LegacyVideoInput, options: LegacyCreateOptions = {}): Promise<LegacyGeneration> {
    return createLegacy(this.deps.transport, 'video', request, options);
  }

  /**
   * Starts an image; with `sync: true` the answer waits up to `sync_timeout` s (default 60) for it to
   * end, and is the generation as it stands then (poll it with wait() when not completed).
   * @example await client.legacy.createImage({ prompt: 'a red fox', format: 'png', sync: true })
   */
  createImage(request: LegacyImageInput, options: LegacyCreateOptions = {}): Promise<LegacyGeneration> {
    return createLegacy(this.deps.transport, 'image', request, options);
  }

  /**
   * Starts the legacy create `kind` (video, image, reframeImage, reframeVideo; upscale and audio with
   * `options.id`): what the named creates below call. @throws PreflightError, the answer's error
   */
  create(
    kind: LegacyCreateKind,
    request: unknown,
    options: LegacyCreateOptions & { id?: string } = {},
  ): Promise<LegacyGeneration> {
    return createLegacy(this.deps.transport, kind, request, options);
  }

  /** Reframes an image by URL to another aspect ratio. @throws PreflightError, the answer's error */
  reframeImage(
    request: LegacyReframeImageInput,
    options: LegacyCreateOptions = {},
  ): Promise<LegacyGeneration> {
    return createLegacy(this.deps.transport, 'reframeImage', request, options);
  }

  /** Reframes a video by URL to another aspect ratio. @throws PreflightError, the answer's error */
  reframeVideo(
    request: LegacyReframeVideoInput,
    options: LegacyCreateOptions = {},
  ): Promise<LegacyGeneration> {
    return createLegacy(this.deps.transport, 'reframeVideo', request, options);
  }

  /** Upscales one of your completed video generations (a new generation). @throws NotFoundError */
  upscale(
    id: string,
    request: LegacyUpscaleInput = {},
    options: LegacyCreateOptions = {},
  ): Promise<LegacyGeneration> {
    return createLegacy(this.deps.transport, 'upscale', request, { ...options, id });
  }

  /** Adds an audio track to one of your completed video generations (a new generation). */
  addAudio(
    id: string,
    request: LegacyAudioInput = {},
    options: LegacyCreateOptions = {},
  ): Promise<LegacyGeneration> {
    return createLegacy(this.deps.transport, 'audio', request, { ...options, id });
  }

  /** One page of your legacy generations, newest first (limit 1..100, default 10). */
  list(
    options: { limit?: number; offset?: number; signal?: AbortSignal } = {},
  ): Promise<LegacyGenerationList> {
    return listLegacy(this.deps.transport, options);
  }

  /** Deletes a legacy generation and its outputs. @throws NotFoundError */
  delete(id: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    return deleteLegacy(this.deps.transport, id, options);
  }

  /** The camera concepts `concepts[].key` accepts. */
  concepts(options: { signal?: AbortSignal } = {}): Promise<string[]> {
    return legacyReads.concepts(this.deps.transport, options);
  }

  /** Your balance, `credit_balance` in US cents. */
  credits(options: { signal?: AbortSignal } = {}): Promise<LegacyCredits> {
    return legacyReads.credits(this.deps.transport, options);
  }

  /** `{ message: 'pong' }` when the legacy surface answers. */
  ping(options: { signal?: AbortSignal } = {}): Promise<{ message: string }> {
    return legacyReads.ping(this.deps.transport, options);
  }

  /** Reads a legacy generation. @throws NotFoundError */
  async get(id: string, options: { signal?: AbortSignal } = {}): Promise<LegacyGeneration> {
    const { body } = await this.deps.transport.json<LegacyGeneration>({
      surface: 'legacy',
      method: 'GET',
      path: `/generations/${encodeURIComponent(id)}`,
      signal: options.signal,
    });
    return body;
  }

  /**
   * Polls a legacy generation until completed or failed.
   * @throws GenerationFailedError (no failure_code on this surface, so not retryable), TimeoutError
   */
  async wait(
    id: string,
    options: {
      signal?: AbortSignal;
      timeoutMs?: number;
      pollIntervalMs?: number;
      onUpdate?: (g: LegacyGeneration) => void;
    } = {},
  ): Promise<LegacyGeneration> {
    const settings = { ...this.deps.polling };
    if (options.pollIntervalMs !== undefined) settings.intervalMs = options.pollIntervalMs;
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    let last: string | null = null;
    for (let n = 0; ; n++) {
      const g = await this.get(id, options.signal ? { signal: options.signal } : {});
      if (g.state !== last) {
        last = g.state;
        options.onUpdate?.(g);
      }
      if (g.state === 'failed') throw new GenerationFailedError(g);
      if (TERMINAL.includes(g.state)) return g;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new TimeoutError(`Legacy generation ${id} did not finish within ${options.timeoutMs} ms`);
      await sleep(
        Math.min(left, pollDelay(n, settings, this.deps.transport.settings.random)),
        options.signal,
      );
    }
  }

  /**
   * Downloads the assets (video, then image) of a completed legacy generation into `dir`, with the
   * guarantees of generations.download: each to `<name>.part`, renamed when complete; an expired URL
   * (403) is refreshed by reading the generation again; a cut transfer resumes with Range.
   *
   * @param generation - a completed legacy generation, or its id
   * @param dir - the target directory (created when missing)
   * @returns one entry per asset (`output-0.mp4`, ...)
   * @throws GenpipeError when it is not completed or has no assets
   * @example await client.legacy.download(await client.legacy.wait(id), './out');
   */
  async download(
    generation: string | LegacyGeneration,
    dir: string,
    options: DownloadOptions = {},
  ): Promise<DownloadedOutput[]> {
    const signal = options.signal ? { signal: options.signal } : {};
    const current = typeof generation === 'string' ? await this.get(generation, signal) : generation;
    const view = legacyAsGeneration(current);
    if (view.state === 'completed' && view.output.length === 0) {
      throw new GenpipeError(`Legacy generation ${current.id} completed without assets to download`);
    }
    return downloadOutputs(
      {
        transport: this.deps.transport,
        refresh: async () => legacyAsGeneration(await this.get(current.id, signal)),
      },
      view,
      dir,
      options,
    );
  }
}
