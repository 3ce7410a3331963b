/**
 * `--dry-run` of `genpipe run` and `genpipe watch`: the pipeline's local steps and the journal's
 * decision for every file, what would be sent, the generations by type and their estimated cost;
 * nothing is uploaded, submitted or written.
 */
export { type DryRunOptions, type DryRunResult, dryRun } from './dry-run.ts';
export {
  DRY_RUN_PLACEHOLDERS,
  type DryRunEntry,
  type DryRunMedia,
  type DryRunOutcome,
  dryRunEntry,
  type MediaSettings,
} from './dry-run-entry.ts';
export { DRY_RUN_TEXTS, dryRunLine, dryRunSummaryLines } from './dry-run-texts.ts';
export { type CostEstimate, type DryRunSummary, DryRunTotals, type PriceSource } from './dry-run-totals.ts';
export {
  loadPriceList,
  type PriceList,
  PriceListError,
  parsePriceList,
  pricesOfAnswer,
} from './price-list.ts';
