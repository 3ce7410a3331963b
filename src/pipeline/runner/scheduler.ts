/**
 * The scheduler: starts a drive for each item handed to it and keeps two items of one input apart (a
 * later item of the same input — watch: a file that changed while its earlier version was processed —
 * waits for the earlier one's drive to end). Each drive holds the item's in-flight slot until it ends.
 */
import type { Item } from '../item.ts';
import { inputKey } from '../raw-names.ts';
import type { BatchItems } from './batch-items.ts';
import type { ItemDriver } from './item-driver.ts';
import type { Release } from './slots.ts';

export class Scheduler {
  private readonly tasks = new Set<Promise<void>>();
  /** The task working on each input, by inputKey (a later item of the same input waits for it). */
  private readonly active = new Map<string, Promise<void>>();

  /** @param ended - told of each drive's final item */
  constructor(
    private readonly driver: ItemDriver,
    private readonly items: BatchItems,
    private readonly ended: (item: Item) => void = () => undefined,
  ) {}

  /** True while an item of the input `key` (its inputKey) is being driven. */
  isActive(key: string): boolean {
    return this.active.has(key);
  }

  /** Drives `found` once no earlier item of its input is in flight; `release` frees its in-flight slot. */
  start(found: Item, release: Release | null): void {
    const key = inputKey(found);
    const before = this.active.get(key);
    const entry = this.items.nextEntry();
    const task = (async () => {
      if (before) await before;
      this.items.keep(entry, found);
      try {
        await this.driver.persist(found);
      } catch {
        // the journal failure stopped the batch; the drive reports the item as stopped
      }
      this.ended(await this.driver.drive(entry, found));
    })().finally(() => release?.());
    this.active.set(key, task);
    this.tasks.add(task);
    void task.finally(() => {
      this.tasks.delete(task);
      if (this.active.get(key) === task) this.active.delete(key);
    });
  }

  /** Settles once every item started (including those started meanwhile) is final. */
  async drain(): Promise<void> {
    while (this.tasks.size > 0) await Promise.all(this.tasks);
  }
}
