/**
 * The keys (content hash and recipe hash: the work) of the rows this session works on, with the file
 * that holds each: a file of the same key admitted meanwhile — a copy in the same batch, a copy dropped
 * into a watched folder — waits for that file to end before it is admitted (same-content.ts's `wait`),
 * without a transaction of its own. Admitted again then, it takes the file's outputs, or its failure.
 */
import type { JournalKey } from './journal-row.ts';
import type { SameContent } from './store.ts';

const keyText = (key: JournalKey): string => `${key.contentHash}\u0000${key.recipeHash}`;

export class KeysInFlight {
  private readonly byKey = new Map<string, SameContent>();
  private readonly keyOfRow = new Map<number, string>();

  /** Row `holder.id` works on `key` now (a fresh or resumed file), until ended(holder.id). */
  add(key: JournalKey, holder: SameContent): void {
    const text = keyText(key);
    if (this.byKey.has(text)) return; // the first one holds it; the others end before it matters
    this.byKey.set(text, holder);
    this.keyOfRow.set(holder.id, text);
  }

  /** The file of another input (not `input`) working on `key` now, if any. */
  holder(key: JournalKey, input: string): SameContent | undefined {
    const holder = this.byKey.get(keyText(key));
    return holder && holder.input !== input ? holder : undefined;
  }

  /** Row `id` ended here (saved finished, or unbound). */
  ended(id: number): void {
    const text = this.keyOfRow.get(id);
    if (text === undefined) return;
    this.keyOfRow.delete(id);
    if (this.byKey.get(text)?.id === id) this.byKey.delete(text);
  }
}
