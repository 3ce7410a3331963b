/**
 * A file's key — what identifies its work: the sha256 of its bytes and its recipe hash (recipe-hash.ts,
 * the shared references' bytes and the service included) — as admit and preview take it, and as an
 * opaque identity of the work for a dry run telling copies apart (StoreDecision.work).
 */
import type { Item } from '../item.ts';
import { sha256File } from './content-hash.ts';
import type { JournalKey } from './journal-row.ts';
import { recipeHash, referencesUsed } from './recipe-hash.ts';
import type { RowDecision } from './resume-decision.ts';
import { twinWanted } from './same-content.ts';
import { stepWork } from './step-work.ts';
import type { PlanOptions, RecipeFiles, WorkIdentity } from './store.ts';

/**
 * The identity of a planned file's work (StoreDecision.work) in an out dir with no store yet (a dry run
 * before the first run): what preview would say of it on an empty store, where its decision is fresh.
 *
 * @example await newFileWork(plannedItem, recipe, { service: 'embedded-emulator' }) // { id: '…', mayReuse: true }
 */
export async function newFileWork(
  item: Item,
  recipe: RecipeFiles,
  opts: PlanOptions & { service: string; signal?: AbortSignal },
): Promise<WorkIdentity> {
  const key = await keyWith(item, recipe.references, opts.service, (path) => sha256File(path, opts.signal));
  const fresh: RowDecision = { action: 'fresh', item, reason: null, supersede: false };
  return {
    id: workId(key),
    mayReuse: twinWanted(fresh, opts),
    ...(key.stepWork ? { steps: key.stepWork } : {}),
  };
}

/** A key as an opaque identity of the work: the same bytes and the same recipe, the same identity. */
export function workId(key: JournalKey): string {
  return `${key.contentHash}:${key.recipeHash}`;
}

/** The key of a planned item for `service`, its files hashed by `hash`. */
export async function keyWith(
  item: Item,
  references: RecipeFiles['references'],
  service: string | undefined,
  hash: (path: string) => Promise<string>,
  formers: readonly string[] = [],
): Promise<JournalKey> {
  const contentHash = await hash(item.absPath);
  const refHashes: Record<string, string> = {};
  for (const name of item.steps.flatMap((s) => referencesUsed(s.request))) {
    const ref = references[name];
    if (ref) refHashes[name] = await hash(ref.absPath);
  }
  const key: JournalKey = { contentHash, recipeHash: recipeHash(item, refHashes, service) };
  const work = stepWork(item, contentHash, refHashes, service);
  if (Object.keys(work).length > 0) key.stepWork = work;
  if (formers.length > 0) key.formerRecipeHashes = formers.map((f) => recipeHash(item, refHashes, f));
  return key;
}
