/**
 * A dry run's totals: files by outcome, the generations that would be created by type, the shared
 * references they use, and the estimated cost from a price list. Counts only: a dry run of any size
 * keeps no entry once it is told.
 */
import { GENERATION_TYPES, type GenerationType } from '../../spec/index.ts';
import type { DryRunEntry, DryRunOutcome } from './dry-run-entry.ts';
import { type PriceList, priceOf } from './price-list.ts';

/** Where the prices came from, in words (`the price list prices.yaml`), or null when there are none. */
export type PriceSource = string | null;

/** The estimated cost of the generations a dry run counted. */
export interface CostEstimate {
  /**
   * Credits for the generations whose type has a price (0 when there is no generation); null when
   * there are generations and no price list.
   */
  credits: number | null;
  /** Where the prices came from (null: nowhere). */
  source: PriceSource;
  /** Generations of a type the price list does not name, by type (not in `credits`). */
  unpriced: Partial<Record<GenerationType, number>>;
}

/** The summary of a dry run (its `--json` line is this with `type: 'dry_run_finished'`). */
export interface DryRunSummary {
  files: number;
  /** Files by outcome. */
  outcomes: Record<DryRunOutcome, number>;
  /**
   * Generations that would be created, by type (one per file sent; one per step sent of a chain; none
   * for a file reused from another with the same content).
   */
  generations: Partial<Record<GenerationType, number>>;
  /** Shared references the files sent use (each uploaded once per batch). */
  references: string[];
  cost: CostEstimate;
}

/** The counts of a dry run (see the module comment). */
export class DryRunTotals {
  private files = 0;
  private readonly outcomes: Record<DryRunOutcome, number> = {
    send: 0,
    fail: 0,
    skip: 0,
    done: 0,
    collect: 0,
    reuse: 0,
  };
  private readonly generations = new Map<GenerationType, number>();
  private readonly references = new Set<string>();

  /** Counts one file. */
  add(entry: DryRunEntry): void {
    this.files++;
    this.outcomes[entry.outcome]++;
    if (entry.steps) {
      // A chain: each of its steps that would be sent is a generation of its own.
      for (const step of entry.steps) if (step.outcome === 'send') this.count(step.generation_type);
    } else if (entry.outcome === 'send' && entry.generation_type !== null) this.count(entry.generation_type);
    else return;
    for (const name of entry.references) this.references.add(name);
  }

  private count(type: GenerationType): void {
    this.generations.set(type, (this.generations.get(type) ?? 0) + 1);
  }

  /** True when some file would fail. */
  get anyFailed(): boolean {
    return this.outcomes.fail > 0;
  }

  /**
   * The summary, with the cost estimated from `prices` (null: unknown).
   *
   * @example totals.summary({ image: 1 }, 'the price list prices.yaml').cost // { credits: 3, … }
   */
  summary(prices: PriceList | null, source: PriceSource): DryRunSummary {
    const generations: Partial<Record<GenerationType, number>> = {};
    for (const type of GENERATION_TYPES) {
      const n = this.generations.get(type);
      if (n) generations[type] = n;
    }
    const priced = prices === null ? null : priceOf(prices, generations);
    const none = Object.keys(generations).length === 0;
    return {
      files: this.files,
      outcomes: { ...this.outcomes },
      generations,
      references: [...this.references].sort(),
      cost: {
        credits: none ? 0 : (priced?.credits ?? null),
        source: prices === null ? null : source,
        unpriced: priced?.unpriced ?? {},
      },
    };
  }
}
