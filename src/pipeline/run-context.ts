/**
 * What the network stages (upload, submit, wait, download, report) may read besides the item: the
 * local stages' StageContext plus the client, the batch's shared reference uploads, the shared poll
 * loop, the journal hook and the batch's settings. The runner builds one per batch.
 */
import type { Generation, GenpipeClient } from '../client/index.ts';
import type { Item } from './item.ts';
import type { GenerationPoller } from './poller.ts';
import type { Redact } from './progress/redact.ts';
import type { SharedReferences } from './references.ts';
import type { StageContext } from './stage.ts';

/** Settings of a batch that stages read. */
export interface RunSettings {
  /** First wait of a file-readiness poll after an upload, ms (the client's polling floor still applies). */
  filePollIntervalMs: number;
  /** Largest image sent as inline base64 `data` when its rule says `upload: base64`. */
  base64MaxBytes: number;
}

/** The context of every stage of a run (the local stages read only its StageContext part). */
export interface RunContext extends StageContext {
  /**
   * Aborted when the batch stops taking new work (the first signal, a batch-stopping answer): it ends
   * waits before new work is sent (submit's create held by the pacer or governor), not work in flight.
   */
  stopping: AbortSignal;
  client: GenpipeClient;
  /** The recipe's shared references, each uploaded once per batch on first use. */
  references: SharedReferences;
  /** The one poll loop every submitted job is waited on through. */
  poller: GenerationPoller;
  /** The poll loop of the jobs of the legacy surface (its GET, read as a Generation). */
  legacyPoller: GenerationPoller;
  /**
   * The read that found a job completed, by generation id, from wait to download: its output URLs
   * are fresh, so download does not read the generation again (it re-reads when they have expired,
   * and when the entry is missing: a resumed item). Download takes the entry out.
   */
  completedReads: Map<string, Generation>;
  /**
   * Journals a fact learned in the middle of a stage, before the stage acts on it (submit records the
   * X-Request-Id here when the client is about to write the create, after its waits). The runner also persists after every transition.
   */
  persist(item: Item): Promise<void>;
  /**
   * The store failed where the stage needed it (a quota shared through it could not be consulted):
   * stops the batch as a failed journal write does, nothing more being sent; returns the error the
   * stage throws, which the runner takes as its own (the item is left, not failed).
   */
  journalFailed(err: unknown): Error;
  /** Masks the secrets the runner knows, for texts written to disk. */
  redact: Redact;
  settings: RunSettings;
}

/** A stage of a run: `(item, ctx) => Promise<Item>`, advancing the item one state (see stage.ts). */
export type RunStage = (item: Item, ctx: RunContext) => Promise<Item>;
