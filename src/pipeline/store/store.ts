/**
 * The store: everything the pipeline keeps across runs, behind one fully asynchronous interface, so the
 * SQLite journal of one machine (sqlite/) and a database shared by workers (postgres/) can stand in
 * for each other. The contract each method keeps is in README.md next to this file; the contract test
 * suite (test/store/store-contract.ts) checks it for every implementation.
 */
import type { JobDurationSample } from '../../client/index.ts';
import type { Item, StepRecord } from '../item.ts';

export type { JobDurationSample } from '../../client/index.ts';

/**
 * What admit decided for an item:
 * - `fresh`: process the file from its current state (the item given), as if never seen;
 * - `resume`: continue with the returned item from its state (the next stage is the one that takes it);
 * - `done`: nothing to do; the returned item is final (reported, or failed) and goes into the report;
 * - `fail`: its create's outcome is unknown and the crash policy fails it in this run: the returned
 *   item is final, failed at `submit`, and is a failure of this run, not earlier work;
 * - `reuse`: another input with the same content and recipe is done (`sameContent`): its outputs are
 *   linked into the returned item's place, and nothing is sent; or, for a chain, some of its steps are
 *   done for the same content (`sameContent.steps`): they are taken, and only the others are sent;
 * - `wait`: another input with the same content and recipe is being worked on (`sameContent`): nothing
 *   is written; admit again (with `waitedOn`) once `settled` resolves.
 */
export type AdmitAction = 'fresh' | 'resume' | 'done' | 'fail' | 'reuse' | 'wait';

/**
 * The input of the out dir with the same content and recipe (same-content.ts) a decision follows: the
 * one whose outputs a `reuse` links, whose generation a resume adopts, whose failure a `done` shares,
 * or which a `wait` waits for.
 */
export interface SameContent {
  /** Its row (PlanOptions.waitedOn, when admit is asked again after a wait). */
  id: number;
  input: string;
  /** Its out folder, relative to the out dir. */
  place: string;
  /** Its item as recorded (reuse: the outputs to link, under `place`). */
  item: Item;
  /** reuse: its input is no longer on disk (the file was renamed or moved). */
  renamed?: true;
  /**
   * reuse of a chain's steps only (step-work.ts): the steps of its item this file takes, as it takes
   * them (paths still under `place`); the file's other steps are sent. Absent: its whole work is reused.
   */
  steps?: StepRecord[];
}

/** The decision for one file. */
export interface StoreDecision {
  action: AdmitAction;
  /** The item to continue with (fresh: the one given; resume/done/fail: the stored one, brought up to date). */
  item: Item;
  /** Why, in plain words (for a progress line); null for a file never seen before. */
  reason: string | null;
  /** The item failed in an earlier run and is tried again (fresh or resume); absent otherwise. */
  retried?: true;
  /**
   * A resume of a file for which the earlier run sent nothing to the service (no upload, no create):
   * continued, not resumed (resume-decision.ts); absent otherwise.
   */
  nothingSent?: true;
  /** The input with the same content the decision follows (same-content.ts); absent otherwise. */
  sameContent?: SameContent;
  /** wait: resolves when `sameContent`'s work may have ended (or a while passed): admit again then. */
  settled?: (signal?: AbortSignal) => Promise<void>;
  /** preview only: the identity of the file's work, by which a dry run tells copies apart. */
  work?: WorkIdentity;
  /**
   * The earlier version of the file this decision replaced while its generation was in flight (a run
   * died or stopped first), taken up to be collected into its own place (left-in-flight.ts): the
   * runner drives it too. Absent otherwise.
   */
  leftBehind?: StoreDecision;
}

/**
 * The identity of a file's work (StoreDecision.work): a dry run tells by it the files of one run that
 * have the same content and recipe, which admit makes wait for the first and reuse its outputs.
 */
export interface WorkIdentity {
  /** The file's key — its content hash and recipe hash — opaque. */
  id: string;
  /**
   * Another input's work of the same key would stand for this file's (same-content.ts's twinWanted):
   * not with --force or --redo-same-content, nor once the file's own create was made.
   */
  mayReuse: boolean;
  /** A chain's: the work of each of its steps by name (step-work.ts), told apart as the file's is. */
  steps?: Readonly<Record<string, string>>;
}

/** The crash policy flag, --retry-failed and --force. */
export interface PlanOptions {
  /** Redo every item (--force). */
  force?: boolean;
  /** Resubmit items whose submission outcome is unknown (--resubmit-unknown); default: fail them. */
  resubmitUnknown?: boolean;
  /**
   * Retry every item that failed at the service (--retry-failed); default: only those whose failure
   * may pass now (a retryable failure_code, a 5xx, 429s, the network).
   */
  retryFailed?: boolean;
  /** Send a file anyway when another input with the same content and recipe is done (--redo-same-content). */
  redoSameContent?: boolean;
  /** The row of the input a `wait` decision waited on, when admit is asked again after it. */
  waitedOn?: number;
}

/** What the store reads of a recipe: the files of its shared references (a Recipe fits). */
export interface RecipeFiles {
  references: Readonly<Record<string, { absPath: string }>>;
}

/** What a batch row records. */
export interface BatchInfo {
  inputDir: string;
  /**
   * Who produces the results: the service's base URL (or `emulator`). Part of every recipe hash (a
   * result from another service is not this one's) and of the shared-reference uploads' key.
   */
  service?: string;
  /**
   * Earlier identities of the same service (see service-identity.ts), never stored: a row whose
   * recipe hash was taken with one of them is this service's work, and is given the current key.
   */
  formerServices?: readonly string[];
  /** The run's options as given (flags), for the record. Never put secrets here. */
  options?: Record<string, unknown>;
}

/** A batch as recorded. */
export interface BatchRow {
  id: number;
  startedAt: number;
  finishedAt: number | null;
  status: 'running' | 'finished' | 'stopped';
  inputDir: string;
  outDir: string;
  service: string | null;
  options: Record<string, unknown>;
  pid: number;
}

/** The size and mtime a finished file had when its work finished. */
export interface FinishedFile {
  size: number;
  mtimeMs: number;
}

/**
 * What identifies one version of a file without reading it: device, inode, size, and the modification
 * and change times in nanoseconds. The change time (ctime) moves on every write and cannot be set back
 * by a user (unlike mtime), so an unchanged identity means unchanged bytes for any practical purpose.
 */
export interface FileIdentity {
  dev: string;
  ino: string;
  size: number;
  mtimeNs: string;
  ctimeNs: string;
}

/** Who holds an out dir (as the store records it). */
export interface LockHolder {
  pid: number;
  /** Start time of the process (field 22 of /proc/<pid>/stat), when known. */
  procStart: string | null;
  host: string;
  /** ms since the epoch */
  acquiredAt: number;
}

/**
 * What a client learned about its quota at the service, to share with the other clients of the same
 * key (see src/client/pacer.ts and concurrency-governor.ts). Keyed by service and key fingerprint
 * (keyFingerprint: a hash, never the key).
 */
export interface QuotaState {
  /** The concurrent-job ceiling learned from "Too many concurrent jobs" 429s; null while unknown. */
  jobCeiling: number | null;
  /** The creates allowed per window (X-RateLimit-Limit); null while unknown. */
  requestLimit: number | null;
  /** The length of the service's sliding request window, ms. */
  windowMs: number | null;
  /** No create is to be sent before this time (an RPM 429's Retry-After), ms since the epoch; null: none. */
  blockedUntil: number | null;
  /** When the creates still counted in the window were counted, ms since the epoch, ascending. */
  recentRequests: number[];
  /** When this state was saved, ms since the epoch (set by the store). */
  updatedAt: number;
}

/** What saveQuotaState takes (the store sets `updatedAt`). */
export type QuotaStateInput = Omit<QuotaState, 'updatedAt'>;

/**
 * The store of one out dir (see README.md for the contract). Every method returns a promise; a write
 * is durable when its promise resolves, and none may be assumed done before.
 */
export interface Store {
  /** Where the store keeps its records, for messages and the report (a file; never credentials). */
  readonly location: string;

  // ---- batches
  /** Records the start of a run or watch session and makes it the current batch; its id. */
  startBatch(info: BatchInfo): Promise<number>;
  /** Records the end of the current batch (nothing without one). */
  finishBatch(status?: 'finished' | 'stopped'): Promise<void>;
  /** The batches of this out dir, oldest first. */
  batches(): Promise<BatchRow[]>;

  // ---- items
  /**
   * Admits a planned item (startBatch first): keys it (content and recipe hash), decides fresh, resume,
   * done or fail (the crash policy), records the decision, and binds the input for save. The item of a
   * `fresh` or `resume` decision carries its place and the content hash it was keyed by.
   */
  admit(
    item: Item,
    recipe: RecipeFiles,
    opts?: PlanOptions & { signal?: AbortSignal },
  ): Promise<StoreDecision>;
  /**
   * Intent before action: records an admitted item holding the request id of a create about to be
   * sent (and no generation id). Resolves once durable; only then may the create be sent.
   *
   * @throws Error when the item holds no request id
   */
  recordIntent(item: Item): Promise<void>;
  /**
   * Records an item's transition (durable on resolve); an item never admitted is noted when it stopped,
   * or was refused or skipped before it was planned (see README.md).
   */
  save(item: Item): Promise<void>;
  /**
   * The out folder (relative to the out dir) for an item the store did not admit (skipped, or failed
   * or stopped before planning): never one holding the service's work for another version of the file,
   * and taken for every other input for the rest of the session. `key` tells the input from others
   * (raw-names.ts inputKey: a path that is not valid UTF-8 prints as a valid one may); `input` by default.
   */
  placeFor(input: string, key?: string): Promise<string>;
  /**
   * Work at the service (submitted, or downloaded and not reported) whose input this batch did not
   * admit and `skip` does not name: each is resumed and bound for save, so a paid result is collected.
   */
  vanishedInFlight(skip?: (input: string) => boolean): Promise<StoreDecision[]>;
  /** Inputs whose work is finished (reported, or failed at the service), with their size and mtime then. */
  finishedFiles(): Promise<Map<string, FinishedFile>>;
  /**
   * The out dir's history as the reports tell it (finished-items.ts): at each place, the item
   * of the newest row there when it finished (reported, failed, or skipped), noted done in an earlier session.
   */
  finishedItems(): Promise<Item[]>;

  // ---- shared references (per the current batch's service)
  /** The file_id of a recent upload of reference `name` with these bytes, or null. */
  reference(name: string, contentHash: string): Promise<string | null>;
  /** Records the upload of reference `name` (durable on resolve; before the file_id is used). */
  saveReference(name: string, contentHash: string, fileId: string): Promise<void>;
  /** Forgets a recorded reference upload (the service no longer has the file). */
  forgetReference(name: string, contentHash: string): Promise<void>;

  // ---- the content-hash cache
  /** The hash recorded for `path` when the file's identity is still `identity`; else null. */
  cachedHash(path: string, identity: FileIdentity): Promise<string | null>;
  /** Records the hash of `path` at `identity` (replacing what was recorded for the path). */
  saveHash(path: string, identity: FileIdentity, hash: string): Promise<void>;

  // ---- the out dir's lock
  /**
   * Takes the out dir for this runner, exclusively, until releaseLock or close (or the process's end).
   *
   * @throws an Error whose `code` is `journal_locked` when another runner holds it
   */
  acquireLock(): Promise<void>;
  /** Gives the out dir back (nothing when not held). */
  releaseLock(): Promise<void>;
  /** Who holds the out dir as recorded, or null. */
  lockHolder(): Promise<LockHolder | null>;

  // ---- quota state shared by the clients of one key
  /** The quota state recorded for `service` and key fingerprint, or null. */
  quotaState(service: string, keyFingerprint: string): Promise<QuotaState | null>;
  /** Records the quota state of `service` and key fingerprint (replacing the earlier one). */
  saveQuotaState(service: string, keyFingerprint: string, state: QuotaStateInput): Promise<void>;

  // ---- how long jobs took at a service
  /**
   * The latest samples (at most JOB_DURATIONS_KEPT per kind, oldest first) recorded for `service`, by
   * job kind (the client's jobKindOf).
   */
  jobDurations(service: string): Promise<Map<string, JobDurationSample[]>>;
  /** Records what one ended job of `kind` showed, dropping the kind's oldest beyond the bound. */
  recordJobDuration(service: string, kind: string, sample: JobDurationSample): Promise<void>;

  /**
   * How many inputs are bound to their row for save (admitted, or taken up by vanishedInFlight, and
   * not yet saved finished): the items this session may still save. Bounded by those in flight, however
   * many files a session admits.
   */
  boundCount(): number;

  /** Releases the lock and closes; later calls reject (close again: nothing). */
  close(): Promise<void>;
}
