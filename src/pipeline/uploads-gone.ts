/**
 * Before an item resumed at `uploaded` (an upload of an earlier run) is submitted: the file_ids its
 * request names — its own media and the shared references — must still be `ready` at the service. One
 * that is not (deleted, expired, failed) would have the create refused; the item is uploaded again
 * instead.
 */
import { type GenpipeClient, NotFoundError } from '../client/index.ts';
import { currentStep, type Item } from './item.ts';
import { fillReferences } from './references.ts';

/**
 * The file_ids of the item's request that the service no longer holds as `ready` (empty when all are).
 *
 * @throws what the client throws other than a 404 (an abort, a batch-stopping error, …)
 * @example if ((await uploadsGone(item, client, signal)).length > 0) // upload again
 */
export async function uploadsGone(item: Item, client: GenpipeClient, signal: AbortSignal): Promise<string[]> {
  const ids = new Set<string>();
  fillReferences(currentStep(item)?.request ?? {}, (id) => {
    ids.add(id);
    return undefined;
  });
  const gone: string[] = [];
  for (const id of ids) {
    try {
      const file = await client.files.get(id, { signal });
      if (file.state !== 'ready') gone.push(id);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      gone.push(id);
    }
  }
  return gone;
}
