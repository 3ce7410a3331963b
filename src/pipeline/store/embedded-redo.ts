/**
 * What a batch against the embedded emulator (`--emulator`) does with the journal's decision for a file:
 * that emulator dies with its process, so a finished result on disk is still good, but an upload or a
 * generation of an earlier run cannot be resumed against the next one; such a file is processed again.
 * The one rule: the run's admission, its dry run and `genpipe status` each apply it.
 */
import type { Item } from '../item.ts';
import type { StoreDecision } from './store.ts';

/** The journal's name for the embedded emulator's results (a batch's service). */
export const EMBEDDED_IDENTITY = 'embedded-emulator';

/** Why an item the journal would resume is redone against the embedded emulator. */
export const EMBEDDED_REDO_REASON =
  'the embedded emulator of the earlier run is gone with its files and generations: processed again';

/**
 * The decision `d` for the planned `item` as it stands against the embedded emulator: a resume that
 * needs the earlier run's upload or generation becomes fresh (in the row's place); any other decision
 * is `d` itself, unchanged (the same object).
 *
 * @example redoneOnEmbedded(item, { action: 'resume', item: atSubmitted, reason }) // { action: 'fresh', reason: EMBEDDED_REDO_REASON, … }
 */
export function redoneOnEmbedded(item: Item, d: StoreDecision): StoreDecision {
  const needsService = d.action === 'resume' && (d.item.state === 'uploaded' || d.item.state === 'submitted');
  if (!needsService) return d;
  // Redone in the row's place: the row keeps its folder, and the item the content hash it was keyed by.
  const redo = { ...item, place: d.item.place, contentHash: d.item.contentHash };
  // A dry run's identity of the work stays: the same content, sent again.
  const work = d.work ? { work: d.work } : {};
  if (!d.retried) return { action: 'fresh', item: redo, reason: EMBEDDED_REDO_REASON, ...work };
  return {
    action: 'fresh',
    item: redo,
    reason: `${d.reason}; ${EMBEDDED_REDO_REASON}`,
    retried: true,
    ...work,
  };
}
