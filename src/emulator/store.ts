/**
 * The emulator's state: clients, keys, files and generations, in memory. Bytes live on disk under
 * the data dir (`blobs/`); records here only point at them.
 */
import type {
  FailureCode,
  FilePurpose,
  FileState,
  GenerationState,
  GenerationType,
  Layer,
  LegacyState,
} from '../spec/index.ts';
import type { ClientConfig, EmulatorConfig, KeyConfig } from './config.ts';

export interface ClientRec extends ClientConfig {
  /** Timestamps (ms) of creates inside the current rate window, oldest first. */
  rateLog: number[];
  /** Timestamps (ms) of GETs inside the current window, for the abuse ceiling. */
  getLog: number[];
  /** Generation id → submission time (ms) of jobs not yet terminal. */
  activeJobs: Map<string, number>;
}

/** What ingest learned about a stored media object. */
export interface MediaInfo {
  kind: 'image' | 'video';
  mime: string;
  width?: number;
  height?: number;
  durationSeconds?: number;
}

export interface FileRec {
  id: string;
  clientId: string;
  /** Monotonic sequence number, a tie-breaker for records created in the same millisecond. */
  seq: number;
  createdAt: number;
  mime_type: string;
  purpose: FilePurpose;
  size_bytes: number;
  state: FileState;
  deletedAt: number | null;
  expiresAt: number | null;
  failure_reason: string | null;
  filename: string | null;
  user_id: string | null;
  mode: 'inline' | 'presigned';
  /** Path of the stored bytes once they are completely received. */
  blobPath: string | null;
  /** Set once POST /complete (presigned) or the multipart body (inline) started ingest. */
  ingestStarted: boolean;
  media: MediaInfo | null;
}

/** A layer of a stored layering output (the wire shape). */
export type LayerInfo = Layer;

export interface StoredOutput {
  /** Output type: image, video or layering. */
  type: string;
  mime: string;
  blobPath: string;
  layer: LayerInfo | null;
}

export interface GenerationRec {
  id: string;
  clientId: string;
  surface: 'agents' | 'legacy';
  seq: number;
  type: GenerationType;
  /** Legacy generation_type (modify_video) when surface is legacy. */
  legacyType?: string;
  model: string;
  state: GenerationState | LegacyState;
  createdAt: number;
  /** The request body as received (base64 data elided). */
  request: Record<string, unknown>;
  requestId: string;
  cost: number;
  failure_reason: string | null;
  failure_code: FailureCode | null;
  outputs: StoredOutput[];
  /** Set when the job began processing (it left `queued`). */
  startedAt?: number | null;
  /** Set when the job reached a terminal state. */
  finishedAt: number | null;
  /** GET /v1/generations/{id} answered for it (its client's reads, counted for the admin view). */
  reads?: number;
  callbackUrl?: string;
}

export class Store {
  readonly clients = new Map<string, ClientRec>();
  readonly keys = new Map<string, KeyConfig>();
  readonly files = new Map<string, FileRec>();
  readonly generations = new Map<string, GenerationRec>();
  private seq = 0;

  constructor(config: EmulatorConfig) {
    for (const c of config.clients) {
      this.clients.set(c.id, { ...c, rateLog: [], getLog: [], activeJobs: new Map() });
    }
    for (const k of config.keys) this.keys.set(k.key, k);
  }

  nextSeq(): number {
    this.seq += 1;
    return this.seq;
  }
}
