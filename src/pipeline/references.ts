/**
 * A batch's shared recipe references (`references: { style: refs/style.png }`): each is uploaded once
 * per batch, on first use, and every request that names it (`{ file_id: '$ref:style' }` after
 * planning) gets its file_id. Concurrent first uses share one upload (a memoised promise); a reference
 * that cannot be uploaded fails every item that uses it with the same reason, and is not retried.
 *
 * Also the placeholder helpers the upload stage uses to put real file ids (or inline data) where plan
 * left `$input` / `$ref:<name>`.
 */
import type { GenpipeClient } from '../client/index.ts';
import type { ImageRef } from '../spec/index.ts';
import { failureOfError } from './failure-class.ts';
import type { ItemFailure } from './item.ts';
import type { Recipe, RecipeReference } from './recipe.ts';
import { REF_FILE_ID_PREFIX } from './recipe-request.ts';
import { isRunnersToHandle, reasonOf } from './runner-errors.ts';

/** A shared reference could not be uploaded: the items using it fail with this message. */
export class ReferenceUploadError extends Error {
  override name = 'ReferenceUploadError';
  constructor(
    readonly reference: string,
    message: string,
    /** Whether a later run may upload it (the items using it then get their `failure` from it). */
    readonly failure: ItemFailure,
    /**
     * The journal's own error, when it was the journal (the store) that failed — reading or recording
     * the upload — not the upload: then the batch stops, as on any failed journal write, and the items
     * are left, not failed.
     */
    readonly journalError: unknown = null,
  ) {
    super(message);
  }
}

/**
 * What earlier runs uploaded (the journal): a reference whose bytes were uploaded recently is reused
 * instead of uploaded again, once the service confirms the file is still `ready`.
 */
export interface ReferenceMemory {
  /** The file_id of an earlier upload of reference `name` with its current bytes, or null. */
  fileId(name: string, signal?: AbortSignal): Promise<string | null>;
  /** Records an upload of reference `name` (before any request uses the file_id). */
  uploaded(name: string, fileId: string, signal?: AbortSignal): Promise<void>;
}

/** What SharedReferences needs. */
export interface SharedReferencesDeps {
  client: GenpipeClient;
  recipe: Pick<Recipe, 'references'>;
  /** The batch's signal (an upload in progress is cancelled with it). */
  signal: AbortSignal;
  /** First wait of the readiness poll. */
  filePollIntervalMs: number;
  /** Uploads of earlier runs to reuse (the journal); none by default. */
  memory?: ReferenceMemory;
}

/** The uploads of a batch's shared references (see the module comment). */
export class SharedReferences {
  private readonly uploads = new Map<string, Promise<string>>();
  private readonly done = new Map<string, string>();

  constructor(private readonly deps: SharedReferencesDeps) {}

  /**
   * The file_id of reference `name`, uploading it (purpose `reference`, waited until ready) on first use.
   *
   * @throws ReferenceUploadError when the service refused the file (the items using it fail); a
   *   batch-stopping error or an abort as it came
   */
  fileId(name: string): Promise<string> {
    let p = this.uploads.get(name);
    if (!p) {
      p = this.upload(name);
      // A rejection is read by every caller; keep it from counting as unhandled meanwhile.
      p.catch(() => undefined);
      this.uploads.set(name, p);
    }
    return p;
  }

  /** The references uploaded so far: name → file_id. */
  uploaded(): Record<string, string> {
    return Object.fromEntries(this.done);
  }

  /** An earlier run's upload of `name` that the service still holds as `ready`, or null. */
  private async remembered(name: string): Promise<string | null> {
    const { memory, client, signal } = this.deps;
    if (!memory) return null;
    const id = await memory.fileId(name, signal);
    if (id === null) return null;
    try {
      const file = await client.files.get(id, { signal });
      return file.state === 'ready' ? id : null;
    } catch (err) {
      if (isRunnersToHandle(err, signal)) throw err;
      return null; // gone (deleted, expired, another client's): upload again
    }
  }

  private async upload(name: string): Promise<string> {
    const ref: RecipeReference | undefined = this.deps.recipe.references[name];
    if (!ref) {
      throw new ReferenceUploadError(name, `the recipe has no reference named '${name}'`, {
        kind: 'unknown reference',
        retryable: false,
      });
    }
    let journal = true;
    try {
      const earlier = await this.remembered(name);
      if (earlier !== null) {
        this.done.set(name, earlier);
        return earlier;
      }
      journal = false;
      const { file } = await this.deps.client.files.upload(ref.absPath, {
        purpose: 'reference',
        mimeType: ref.mime,
        signal: this.deps.signal,
        waitUntilReady: true,
        pollIntervalMs: this.deps.filePollIntervalMs,
      });
      journal = true;
      await this.deps.memory?.uploaded(name, file.id, this.deps.signal);
      this.done.set(name, file.id);
      return file.id;
    } catch (err) {
      if (isRunnersToHandle(err, this.deps.signal)) throw err;
      throw new ReferenceUploadError(
        name,
        `shared reference '${name}' (${ref.path}) could not be uploaded: ${reasonOf(err)}`,
        failureOfError(err),
        journal && this.deps.memory && !isFileError(err) ? err : null,
      );
    }
  }
}

/** An error of the reference's own file (hashed for the journal's memory), not of the journal. */
function isFileError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code;
  return code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR';
}

// ---- placeholders --------------------------------------------------------------------------------

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A copy of `request` in which every media reference (an object with a string `file_id`) for which
 * `replace(file_id)` returns a reference is replaced by it; others are kept as they are.
 *
 * @example fillReferences(req, (id) => (id === '$input' ? { file_id: realId } : undefined))
 */
export function fillReferences(request: Json, replace: (fileId: string) => ImageRef | undefined): Json {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (!isObject(v)) return v;
    if (typeof v.file_id === 'string') {
      const next = replace(v.file_id);
      if (next !== undefined) {
        const { file_id: _old, ...rest } = v;
        return { ...rest, ...next };
      }
      return { ...v };
    }
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) out[k] = walk(x);
    return out;
  };
  return walk(request) as Json;
}

/** The names of the shared references a planned request still holds as `$ref:<name>` placeholders. */
export function referenceNamesIn(request: Json): string[] {
  const names = new Set<string>();
  fillReferences(request, (id) => {
    if (id.startsWith(REF_FILE_ID_PREFIX)) names.add(id.slice(REF_FILE_ID_PREFIX.length));
    return undefined;
  });
  return [...names];
}
