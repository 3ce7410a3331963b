/**
 * Emulator configuration: the JSON file's shape, its defaults, and a loader that names the bad key.
 * Every key is optional; without a file the emulator runs one active client with a printed default key.
 */
import { readFileSync } from 'node:fs';
import {
  CHOICES,
  FAILURE_CODE_NAMES,
  type FailureCode,
  type GenerationType,
  LEGACY_CHOICES,
  LIMITS,
} from '../spec/index.ts';

export type ClientState = 'active' | 'suspended' | 'deactivated';

export interface ClientConfig {
  id: string;
  state: ClientState;
  /** Creates allowed per rate window (X-RateLimit-Limit). */
  rpm: number;
  /** Concurrent jobs ceiling. */
  concurrency: number;
  /** Balance in credits; each generation type costs `costs[type]`. */
  balance: number;
}

export interface KeyConfig {
  key: string;
  client: string;
  revoked?: boolean;
  /** ISO date-time after which the key is expired. */
  expires_at?: string;
}

export interface FaultConfig {
  /** Probability per generation that it fails with the given failure_code. */
  failure_codes: Partial<Record<FailureCode, number>>;
  /** Probability that POST /v1/generations answers 502 (nothing queued). */
  http_502: number;
  /** Probability that POST /v1/generations or POST /v1/files answers 503 (nothing queued). */
  http_503: number;
  /** Probability that a url media reference finds the fetch proxy down (502 `<path>: fetch proxy unavailable`). */
  fetch_proxy_down: number;
  /** Probability that a /v1 request's connection is reset before anything is done. */
  reset_before: number;
  /** Probability that a /v1 POST is carried out and then its connection reset (the response is lost). */
  reset_after: number;
  /**
   * Answers lost on purpose, by call: `{ "POST /v1/files": 2 }` — the next 2 calls of POST /v1/files
   * are carried out, then their connection reset (counted down as they happen; deterministic, unlike
   * `reset_after`).
   */
  lose_answers: Record<string, number>;
  /** Probability that the rate-limiting backend is "unavailable": the create is let through without X-RateLimit headers. */
  rate_backend_down: number;
  /** Added latency per /v1 request in ms: a number, or [min, max] drawn uniformly. */
  latency_ms: number | [number, number];
}

/** A time in ms: fixed, or [min, max] drawn uniformly each time it is used. */
export type DurationMs = number | [number, number];

/** The generation types that may have a processing time of their own (else their kind's). */
const OWN_PROCESSING_TYPES = ['image_edit', 'video_edit', 'video_reframe'] as const;

export type ProcessingMs = { image: DurationMs; video: DurationMs } & Partial<
  Record<(typeof OWN_PROCESSING_TYPES)[number], DurationMs>
>;

/** The processing time of a generation type: its own when configured, else its media kind's. */
export function processingMsFor(processing: ProcessingMs, type: GenerationType): DurationMs {
  if (type !== 'image' && type !== 'video' && processing[type] !== undefined) return processing[type];
  return type.startsWith('video') ? processing.video : processing.image;
}

export interface EmulatorConfig {
  clients: ClientConfig[];
  keys: KeyConfig[];
  /** Length of the sliding rate window in seconds (the interface's 60). */
  rate_window_s: number;
  /**
   * Processing time per media kind, ms: a number, or [min, max] drawn uniformly per generation (from
   * the seeded random source); a generation is queued for `queue_ms` first. image_edit, video_edit
   * and video_reframe may have their own; without it they take their kind's (image or video).
   */
  processing_ms: ProcessingMs;
  queue_ms: number;
  output_url_ttl_s: number;
  upload_url_ttl_s: number;
  inline_upload_max_bytes: number;
  /** Hosts that url media references may be fetched from. */
  fetch_allow_hosts: string[];
  /** Cost of each generation type in credits. */
  costs: Record<GenerationType, number>;
  /** Words that make a prompt fail with content_moderated (case-insensitive, whole words). */
  blocked_words: string[];
  faults: FaultConfig;
  /** Seed of the random source behind faults; the same seed and requests give the same outcomes. */
  seed: number;
  /** GET requests per client per rate window before the API-wide abuse ceiling answers 429. */
  abuse_ceiling: number;
  /** Secret for signing storage URLs; random per process when omitted. */
  signing_secret?: string;
  /** Largest JSON request body in bytes (base64 media travels in JSON). */
  json_body_max_bytes: number;
  /** Callback delivery attempts on the legacy surface (1 = no retry). */
  callback_attempts: number;
  /** Time limit of one legacy callback delivery attempt, ms. */
  callback_timeout_ms: number;
  /**
   * Every output is a minimal valid file (an 8×8 PNG, a one-frame 16×16 MP4) instead of a rendering
   * of the request: for benches of the client side, where rendering would eat the machine.
   */
  tiny_outputs: boolean;
}

export const DEFAULT_KEY = 'svc-api-emulator-default-key';
export const DEFAULT_CLIENT_ID = 'default';

export const DEFAULT_FAULTS: FaultConfig = {
  failure_codes: {},
  http_502: 0,
  http_503: 0,
  fetch_proxy_down: 0,
  reset_before: 0,
  reset_after: 0,
  lose_answers: {},
  rate_backend_down: 0,
  latency_ms: 0,
};

export function defaultConfig(): EmulatorConfig {
  return {
    clients: [{ id: DEFAULT_CLIENT_ID, state: 'active', rpm: 60, concurrency: 10, balance: 1_000_000 }],
    keys: [{ key: DEFAULT_KEY, client: DEFAULT_CLIENT_ID }],
    rate_window_s: LIMITS.rateWindowSeconds,
    processing_ms: { image: 1500, video: 3000 },
    queue_ms: 250,
    output_url_ttl_s: LIMITS.outputUrlTtlSeconds,
    upload_url_ttl_s: 3600,
    inline_upload_max_bytes: CHOICES.inlineUploadMaxBytes,
    fetch_allow_hosts: ['127.0.0.1', 'localhost', '::1'],
    costs: { image: 1, image_edit: 1, video: 10, video_edit: 10, video_reframe: 10 },
    blocked_words: [],
    faults: { ...DEFAULT_FAULTS, lose_answers: {} },
    seed: 1,
    abuse_ceiling: CHOICES.abuseCeilingPerWindow,
    json_body_max_bytes: 80 * 1024 * 1024,
    callback_attempts: 3,
    callback_timeout_ms: LEGACY_CHOICES.callback.timeoutMs,
    tiny_outputs: false,
  };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value received, as a message quotes it: its JSON (cut when long), or `nothing`. */
function received(v: unknown): string {
  if (v === undefined) return 'nothing';
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** The shapes of the config's object and list fields, as the messages about them write them. */
const CLIENT_SHAPE = '{ id, state?, rpm?, concurrency?, balance? }';
const KEY_SHAPE = '{ key, client, revoked?, expires_at? }';
const PROCESSING_KEYS = ['image', 'video', ...OWN_PROCESSING_TYPES] as const;
const SHAPES = {
  clients: `[${CLIENT_SHAPE}, …]`,
  keys: `[${KEY_SHAPE}, …]`,
  processing_ms:
    '{ image: <ms>, video: <ms>, image_edit?: <ms>, video_edit?: <ms>, video_reframe?: <ms> } (each a number of ms, or [min, max])',
  failure_codes: '{ <failure_code>: <probability>, … }',
} as const;

/** A field that is not of its shape: `Expected <field>: <shape> but received <value>`. */
function shapeError(where: string, shape: string, v: unknown): ConfigError {
  return new ConfigError(`Expected ${where}: ${shape} but received ${received(v)}`);
}

function expectNumber(v: unknown, where: string, min = 0, max = Number.POSITIVE_INFINITY): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    const range = max === Number.POSITIVE_INFINITY ? `of at least ${min}` : `between ${min} and ${max}`;
    throw new ConfigError(`Expected a number ${range} for ${where} but received ${received(v)}`);
  }
  return v;
}

/** A DurationMs: a number of ms, or [min, max] with min <= max. */
function expectDuration(v: unknown, where: string): DurationMs {
  if (!Array.isArray(v)) return expectNumber(v, where);
  if (v.length !== 2) {
    throw new ConfigError(`Expected a number or [min, max] for ${where} but received ${received(v)}`);
  }
  const lo = expectNumber(v[0], `${where}[0]`);
  return [lo, expectNumber(v[1], `${where}[1]`, lo)];
}

/** A time drawn from a DurationMs (uniformly between its bounds, from `rng`). */
export function drawMs(d: DurationMs, rng: { between(lo: number, hi: number): number }): number {
  return Array.isArray(d) ? rng.between(d[0], d[1]) : d;
}

/** The longest rate window the emulator takes, seconds (a year). */
const MAX_RATE_WINDOW_S = 31_536_000;

/**
 * rate_window_s: whole seconds (X-RateLimit-Reset is in whole seconds, so a fraction of one cannot be
 * told), from 1 to a year.
 */
function expectWindowSeconds(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_RATE_WINDOW_S) {
    throw new ConfigError(
      `Expected a whole number of seconds between 1 and ${MAX_RATE_WINDOW_S} (a year) for rate_window_s but received ${received(v)}`,
    );
  }
  return v;
}

function expectString(v: unknown, where: string): string {
  if (typeof v !== 'string' || v.length === 0) {
    throw new ConfigError(`Expected a non-empty string for ${where} but received ${received(v)}`);
  }
  return v;
}

function expectProbability(v: unknown, where: string): number {
  return expectNumber(v, where, 0, 1);
}

/**
 * Merges a partial, untrusted config object over the defaults, checking every key.
 * @throws ConfigError naming the key and the bad value.
 */
export function resolveConfig(input: unknown): EmulatorConfig {
  const base = defaultConfig();
  if (input === undefined || input === null) return base;
  if (!isObject(input)) {
    throw new ConfigError(
      `Expected a JSON object of config keys at the top of the config but received ${received(input)}`,
    );
  }
  const known = new Set([...Object.keys(base), 'signing_secret']);
  for (const k of Object.keys(input)) {
    if (!known.has(k)) throw new ConfigError(`Unknown config key '${k}' (known: ${[...known].join(', ')})`);
  }
  const cfg: EmulatorConfig = { ...base, faults: { ...base.faults } };
  if (input.clients !== undefined) {
    if (!Array.isArray(input.clients)) throw shapeError('clients', SHAPES.clients, input.clients);
    cfg.clients = input.clients.map((c, i) => {
      if (!isObject(c)) throw shapeError(`clients[${i}]`, CLIENT_SHAPE, c);
      const state = c.state ?? 'active';
      if (state !== 'active' && state !== 'suspended' && state !== 'deactivated') {
        throw new ConfigError(
          `Expected active, suspended or deactivated for clients[${i}].state but received ${JSON.stringify(state)}`,
        );
      }
      return {
        id: expectString(c.id, `clients[${i}].id`),
        state,
        rpm: expectNumber(c.rpm ?? 60, `clients[${i}].rpm`, 1),
        concurrency: expectNumber(c.concurrency ?? 10, `clients[${i}].concurrency`, 1),
        balance: expectNumber(c.balance ?? 1_000_000, `clients[${i}].balance`, 0),
      };
    });
  }
  if (input.keys !== undefined) {
    if (!Array.isArray(input.keys)) throw shapeError('keys', SHAPES.keys, input.keys);
    cfg.keys = input.keys.map((k, i) => {
      if (!isObject(k)) throw shapeError(`keys[${i}]`, KEY_SHAPE, k);
      const key: KeyConfig = {
        key: expectString(k.key, `keys[${i}].key`),
        client: expectString(k.client, `keys[${i}].client`),
      };
      if (k.revoked !== undefined) key.revoked = Boolean(k.revoked);
      if (k.expires_at !== undefined) {
        const s = expectString(k.expires_at, `keys[${i}].expires_at`);
        if (Number.isNaN(Date.parse(s)))
          throw new ConfigError(
            `Expected an ISO date-time for keys[${i}].expires_at but received ${JSON.stringify(s)}`,
          );
        key.expires_at = s;
      }
      return key;
    });
  }
  const clientIds = new Set(cfg.clients.map((c) => c.id));
  cfg.keys.forEach((k, i) => {
    if (!clientIds.has(k.client))
      throw new ConfigError(`keys[${i}].client names unknown client '${k.client}'`);
  });
  if (input.rate_window_s !== undefined) cfg.rate_window_s = expectWindowSeconds(input.rate_window_s);
  if (input.processing_ms !== undefined) cfg.processing_ms = resolveProcessing(input.processing_ms, base);
  for (const key of [
    'queue_ms',
    'output_url_ttl_s',
    'upload_url_ttl_s',
    'inline_upload_max_bytes',
    'seed',
    'abuse_ceiling',
    'json_body_max_bytes',
    'callback_attempts',
  ] as const) {
    if (input[key] !== undefined) cfg[key] = expectNumber(input[key], key);
  }
  if (input.callback_timeout_ms !== undefined)
    cfg.callback_timeout_ms = expectNumber(input.callback_timeout_ms, 'callback_timeout_ms', 1);
  if (input.fetch_allow_hosts !== undefined) {
    if (!Array.isArray(input.fetch_allow_hosts))
      throw shapeError('fetch_allow_hosts', '[<host name>, …]', input.fetch_allow_hosts);
    cfg.fetch_allow_hosts = input.fetch_allow_hosts.map((h, i) => expectString(h, `fetch_allow_hosts[${i}]`));
  }
  if (input.costs !== undefined) {
    if (!isObject(input.costs)) {
      const types = Object.keys(base.costs).join(', ');
      throw shapeError('costs', `{ <generation type>: <credits>, … } (types: ${types})`, input.costs);
    }
    cfg.costs = { ...base.costs };
    for (const [t, v] of Object.entries(input.costs)) {
      if (!(t in base.costs)) throw new ConfigError(`Unknown generation type '${t}' in costs`);
      cfg.costs[t as GenerationType] = expectNumber(v, `costs.${t}`);
    }
  }
  if (input.blocked_words !== undefined) {
    if (!Array.isArray(input.blocked_words))
      throw shapeError('blocked_words', '[<word>, …]', input.blocked_words);
    cfg.blocked_words = input.blocked_words.map((w, i) => expectString(w, `blocked_words[${i}]`));
  }
  if (input.faults !== undefined) cfg.faults = resolveFaults(input.faults);
  if (input.tiny_outputs !== undefined) {
    if (typeof input.tiny_outputs !== 'boolean')
      throw new ConfigError(
        `Expected true or false for tiny_outputs but received ${received(input.tiny_outputs)}`,
      );
    cfg.tiny_outputs = input.tiny_outputs;
  }
  if (input.signing_secret !== undefined)
    cfg.signing_secret = expectString(input.signing_secret, 'signing_secret');
  return cfg;
}

/** Checks a (partial) processing_ms object and merges it over the defaults. */
function resolveProcessing(input: unknown, base: EmulatorConfig): EmulatorConfig['processing_ms'] {
  if (!isObject(input)) throw shapeError('processing_ms', SHAPES.processing_ms, input);
  for (const k of Object.keys(input)) {
    if (!(PROCESSING_KEYS as readonly string[]).includes(k)) {
      const keys = `${PROCESSING_KEYS.slice(0, -1).join(', ')} and ${PROCESSING_KEYS.at(-1)}`;
      throw new ConfigError(`Unknown key '${k}' in processing_ms (it has ${keys})`);
    }
  }
  const out: ProcessingMs = {
    image: expectDuration(input.image ?? base.processing_ms.image, 'processing_ms.image'),
    video: expectDuration(input.video ?? base.processing_ms.video, 'processing_ms.video'),
  };
  for (const t of OWN_PROCESSING_TYPES) {
    if (input[t] !== undefined) out[t] = expectDuration(input[t], `processing_ms.${t}`);
  }
  return out;
}

/** Checks faults.lose_answers: `{ "<METHOD> /v1/<path>": <count> }`. */
function resolveLostAnswers(v: unknown): Record<string, number> {
  const shape = '{ "<METHOD> /v1/<path>": <count>, … }';
  if (!isObject(v)) throw shapeError('faults.lose_answers', shape, v);
  const out: Record<string, number> = {};
  for (const [call, n] of Object.entries(v)) {
    if (!/^(GET|POST|PUT|DELETE) \/v1\/\S*$/.test(call)) {
      throw new ConfigError(
        `Expected a call such as "POST /v1/files" in faults.lose_answers but received '${call}'`,
      );
    }
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
      throw new ConfigError(
        `Expected a whole number of at least 0 for faults.lose_answers["${call}"] but received ${received(n)}`,
      );
    }
    out[call] = n;
  }
  return out;
}

/** Checks a (partial) faults object and merges it over the defaults. */
export function resolveFaults(input: unknown): FaultConfig {
  if (!isObject(input)) {
    const faults = Object.keys(DEFAULT_FAULTS).join(', ');
    throw shapeError('faults', `{ <fault>: <probability>, … } (faults: ${faults})`, input);
  }
  const f: FaultConfig = { ...DEFAULT_FAULTS, failure_codes: {}, lose_answers: {} };
  for (const [k, v] of Object.entries(input)) {
    switch (k) {
      case 'failure_codes': {
        if (!isObject(v)) throw shapeError('faults.failure_codes', SHAPES.failure_codes, v);
        for (const [code, p] of Object.entries(v)) {
          if (!FAILURE_CODE_NAMES.includes(code as FailureCode)) {
            throw new ConfigError(
              `Unknown failure_code '${code}' in faults.failure_codes; known: ${FAILURE_CODE_NAMES.join(', ')}`,
            );
          }
          f.failure_codes[code as FailureCode] = expectProbability(p, `faults.failure_codes.${code}`);
        }
        break;
      }
      case 'latency_ms':
        f.latency_ms = expectDuration(v, 'faults.latency_ms');
        break;
      case 'lose_answers':
        f.lose_answers = resolveLostAnswers(v);
        break;
      case 'http_502':
      case 'http_503':
      case 'fetch_proxy_down':
      case 'reset_before':
      case 'reset_after':
      case 'rate_backend_down':
        f[k] = expectProbability(v, `faults.${k}`);
        break;
      default:
        throw new ConfigError(`Unknown fault '${k}'`);
    }
  }
  const total = Object.values(f.failure_codes).reduce((a, b) => a + (b ?? 0), 0);
  if (total > 1) throw new ConfigError(`faults.failure_codes probabilities add up to ${total}, more than 1`);
  return f;
}

/** Reads and resolves a JSON config file. */
export function loadConfigFile(path: string): EmulatorConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`Cannot read config file ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`Config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  try {
    return resolveConfig(json);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${path}: ${err.message}`);
    throw err;
  }
}
