/**
 * The emulator's media store (`genpipe serve` only; the service has none): a local file's bytes sent to
 * `PUT {root}/_emulator/media`, answered with a signed URL the legacy surface can fetch. `{root}` is the
 * server the legacy creates go to: the legacy base URL without its `/dream-machine/v1` (the URL the
 * legacy surface fetches must be its own store's). Before any byte is sent, `GET {root}/_emulator/media`
 * must answer the emulator's mark: against any other server nothing is sent and EmulatorOnlyError says
 * why. No Authorization header is sent here.
 */
import { createReadStream } from 'node:fs';
import { LEGACY_BASE_PATH } from '../spec/index.ts';
import type { ApiTransport } from './api-transport.ts';
import { GenpipeError } from './errors.ts';

/** The mark `GET /_emulator/media` answers on the emulator (src/emulator/routes/media.ts). */
const EMULATOR_SERVICE = 'genpipe-emulator';
const MEDIA_PATH = '/_emulator/media';

/** A convenience of the emulator asked of something that is not the emulator. */
export class EmulatorOnlyError extends GenpipeError {
  override name = 'EmulatorOnlyError';
  override readonly code = 'GENPIPE_EMULATOR_ONLY';
}

/** The texts of the emulator's media store. */
export const EMULATOR_MEDIA_TEXTS = {
  notEmulator: (base: string, why: string) =>
    `media_url: emulator works against genpipe serve only, and ${base} is not it (GET ${MEDIA_PATH} ${why}): nothing was sent; give the rule a media_url template of a public address instead`,
  changed: (sha256: string) =>
    `the emulator received other bytes (sha256 ${sha256}) than the file checked: it changed while it was sent`,
} as const;

export interface EmulatorMediaPut {
  url: string;
  sha256: string;
  bytes: number;
}

/**
 * The server whose media store a legacy create's URL must be in: the legacy base URL (the agents base
 * URL when none is set) without its `/dream-machine/v1`.
 * @example emulatorMediaRoot({ baseUrl: 'http://a', legacyBaseUrl: 'http://b/dream-machine/v1' }) // 'http://b'
 */
export function emulatorMediaRoot(settings: { baseUrl: string; legacyBaseUrl: string | null }): string {
  const legacy = settings.legacyBaseUrl ?? settings.baseUrl;
  return legacy.endsWith(LEGACY_BASE_PATH) ? legacy.slice(0, -LEGACY_BASE_PATH.length) : legacy;
}

/** The emulator's media store of a client. */
export class EmulatorMedia {
  private confirmed: Promise<void> | null = null;
  constructor(private readonly transport: ApiTransport) {}

  /**
   * Resolves once the legacy surface's server is found to be the emulator (`GET /_emulator/media`,
   * asked once): what put checks before any byte is sent, and what a dry run asks.
   * @throws EmulatorOnlyError
   */
  confirm(signal?: AbortSignal): Promise<void> {
    this.confirmed ??= this.probe(signal).catch((err) => {
      this.confirmed = null;
      throw err;
    });
    return this.confirmed;
  }

  private async probe(signal?: AbortSignal): Promise<void> {
    const base = emulatorMediaRoot(this.transport.settings);
    const res = await this.transport.attempt({
      method: 'GET',
      url: this.transport.url('storage', `${base}${MEDIA_PATH}`),
      headers: { 'user-agent': this.transport.settings.userAgent },
      signal,
    });
    const text = await res.body.text().catch(() => '');
    let mark: unknown = null;
    try {
      mark = JSON.parse(text);
    } catch {}
    if (res.status !== 200 || (mark as { service?: unknown } | null)?.service !== EMULATOR_SERVICE) {
      throw new EmulatorOnlyError(
        EMULATOR_MEDIA_TEXTS.notEmulator(base, `answered ${res.status} without the emulator's mark`),
      );
    }
  }

  /**
   * Sends a file's bytes to the emulator's media store.
   * @param options.sha256 - the bytes expected (the file as checked): other bytes throw
   * @returns the signed URL of the bytes, their sha256 and size
   * @throws EmulatorOnlyError when the legacy surface's server is not the emulator (nothing sent)
   */
  async put(
    path: string,
    options: { signal?: AbortSignal; sha256?: string } = {},
  ): Promise<EmulatorMediaPut> {
    await this.confirm(options.signal);
    const base = emulatorMediaRoot(this.transport.settings);
    const res = await this.transport.attempt({
      method: 'PUT',
      url: this.transport.url('storage', `${base}${MEDIA_PATH}`),
      headers: {
        'user-agent': this.transport.settings.userAgent,
        'content-type': 'application/octet-stream',
      },
      body: createReadStream(path),
      signal: options.signal,
    });
    if (res.status !== 201) throw await this.transport.error(res, null);
    const put = (await res.body.json()) as EmulatorMediaPut;
    if (options.sha256 !== undefined && put.sha256 !== options.sha256) {
      throw new GenpipeError(EMULATOR_MEDIA_TEXTS.changed(put.sha256));
    }
    return put;
  }
}
