/**
 * A store as the runner's hooks: one object with the few functions `genpipe run` and `genpipe watch`
 * call, so wiring the journal (or any Store) into a runner is a handful of lines (see each member).
 * Every hook is asynchronous and the runner awaits each.
 */
import type { Item } from '../item.ts';
import { inputKey, placeInput } from '../raw-names.ts';
import { hashWithCache } from './content-hash.ts';
import type { PlanOptions, RecipeFiles, Store, StoreDecision } from './store.ts';

/** What a runner calls (see journalRunHooks). */
export interface JournalRunHooks {
  /**
   * RunOptions.persist: after every transition, and by submit before it sends the create. Durable when
   * it resolves; rejects when an item holding service work was never admitted (a wiring error).
   */
  persist(item: Item): Promise<void>;
  /**
   * Once per item, when it is `planned` (before check): the item to continue with. `fresh` and
   * `resume` continue from `decision.item.state` through the usual stage list; `done` is final.
   */
  admit(item: Item, signal?: AbortSignal, waitedOn?: number): Promise<StoreDecision>;
  /**
   * After discovery ended: generations in flight (or downloaded, not reported) whose input is gone;
   * drive each from its state so that the paid result is still collected and reported. Inputs for
   * which `skip` is true are left alone (RunOptions.vanished passes the inputs seen in the batch and
   * never admitted).
   */
  vanished(skip?: (input: string) => boolean): Promise<StoreDecision[]>;
  /**
   * RunOptions.placeFor: the out folder of an item the store did not plan (skipped, or failed or
   * stopped before planning), never one holding the service's work for another version of the file.
   */
  placeFor(item: Item): Promise<string>;
  /** For SharedReferences: the file_id of a recent upload of reference `name` with its current bytes, or null. */
  referenceFileId(name: string, signal?: AbortSignal): Promise<string | null>;
  /** For SharedReferences: records the upload of reference `name` (call before using the file_id). */
  referenceUploaded(name: string, fileId: string, signal?: AbortSignal): Promise<void>;
}

/**
 * The hooks of a store for one batch (startBatch must have been called).
 *
 * @param opts - `force` (--force), `resubmitUnknown` (--resubmit-unknown), `retryFailed` (--retry-failed)
 * @param retryFailedOnce - true for an input whose next admission is to retry its failure as
 *   --retry-failed would (the dashboard's retry of one file); asked once per admission
 * @example
 * const hooks = journalRunHooks(journal, recipe, { force, resubmitUnknown });
 * startBatch({ …, persist: hooks.persist, admit: hooks.admit, vanished: hooks.vanished });
 */
export function journalRunHooks(
  store: Store,
  recipe: RecipeFiles,
  opts: PlanOptions = {},
  retryFailedOnce?: (input: string) => boolean,
): JournalRunHooks {
  const refHash = (name: string, signal?: AbortSignal): Promise<string | null> => {
    const ref = recipe.references[name];
    return ref ? hashWithCache(store, ref.absPath, signal) : Promise.resolve(null);
  };
  return {
    // A file whose name is not valid UTF-8 has its row by its bytes (admission.ts's rowInputOf).
    persist: (item) => store.save(item),
    admit: (item, signal, waitedOn) =>
      store.admit(item, recipe, {
        ...opts,
        ...(retryFailedOnce?.(item.input) ? { retryFailed: true } : {}),
        signal,
        ...(waitedOn !== undefined ? { waitedOn } : {}),
      }),
    vanished: (skip) => store.vanishedInFlight(skip),
    placeFor: (item) => store.placeFor(placeInput(item), inputKey(item)),
    referenceFileId: async (name, signal) => {
      const hash = await refHash(name, signal);
      return hash === null ? null : store.reference(name, hash);
    },
    referenceUploaded: async (name, fileId, signal) => {
      const hash = await refHash(name, signal);
      if (hash !== null) await store.saveReference(name, hash, fileId);
    },
  };
}
