/**
 * genpipe's pipeline: a folder in, finished media out. The per-file state machine (item.ts), the
 * stages (stages/*, in the order of stage-list.ts), the runner that schedules them (runner.ts), the
 * recipe, discovery, progress displays and reports. This file gathers what a command needs to run a
 * batch, a dry run, a status or a report. It is not the only way in: the CLI also imports the index
 * files of progress/, watch/, store/, store/postgres/ and distributed/, and a few single modules.
 */
export { logFileRefusal, OVERLAP_WORDS, type OverlapWords, overlapRefusal } from './batch-paths.ts';
export { type DiscoverOptions, discover, SKIP_REASONS } from './discover.ts';
export {
  DRY_RUN_TEXTS,
  type DryRunEntry,
  type DryRunOptions,
  type DryRunResult,
  type DryRunSummary,
  dryRun,
  dryRunLine,
  dryRunSummaryLines,
  loadPriceList,
  type PriceList,
  PriceListError,
  pricesOfAnswer,
} from './dry-run/index.ts';
export {
  type BatchTotals,
  type EventSink,
  itemStatus,
  type PipelineEvent,
  type ReportStatus,
} from './events.ts';
export { type InputSelection, SELECTION_REASONS, selectionFilter } from './input-selection.ts';
export {
  FINAL_ITEM_STATES,
  ITEM_STATES,
  type Item,
  type ItemAttempt,
  type ItemJournalNote,
  type ItemLayer,
  type ItemState,
  newItem,
  STAGE_NAMES,
  type StageName,
} from './item.ts';
export {
  createMetrics,
  type GenpipeMetrics,
  type MetricsServer,
  MetricsServerError,
  startMetricsServer,
} from './metrics/index.ts';
export {
  GenerationPoller,
  type JobDurations,
  jobKindOf,
  POLL_DEFAULTS,
  type PollerOptions,
  RecentJobDurations,
} from './poller.ts';
export {
  applyEvent,
  createProgress,
  createRedactor,
  type LogFile,
  LogFileOpenError,
  newProgressState,
  openLogFile,
  type ProgressDisplay,
  type ProgressOptions,
  type ProgressState,
  progressCounts,
  type Redact,
  seedEarlier,
} from './progress/index.ts';
export {
  isRecipeError,
  loadRecipe,
  RECIPE_FILE_NAME,
  type Recipe,
  RecipeError,
  type RecipeProblem,
  type RecipeRule,
  readRecipe,
  recipeFiles,
  relativeGlobProblem,
  UPLOAD_PREFERENCES,
  type UploadPreference,
} from './recipe.ts';
export { type ReferenceMemory, SharedReferences } from './references.ts';
export {
  type BatchReport,
  buildReport,
  type HeldBackFile,
  IGNORED_LISTED_MAX,
  ignoredText,
  itemPlace,
  journalCountsText,
  journalDidAnything,
  notLookedAtText,
  REPORT_HTML_FILE,
  REPORT_JSON_FILE,
  RESULT_FILE,
  type ReportHeldBack,
  type ReportIgnored,
  type ReportJournal,
  type ReportJournalMeta,
  readReportHead,
  writeReports,
} from './report/index.ts';
export type { RunContext, RunSettings, RunStage } from './run-context.ts';
export { RUN_FLAGS } from './run-flags.ts';
export { IntakeGate } from './runner/intake-gate.ts';
export { isScratchName, sweepBatchScratch, sweepItemScratch } from './runner/scratch-sweep.ts';
export {
  type AdmitDecision,
  type Batch,
  type BatchResult,
  type BatchStop,
  JournalWriteError,
  journalErrorWords,
  RUN_DEFAULTS,
  type RunOptions,
  runBatch,
  startBatch,
} from './runner.ts';
export { batchStopReason, isBatchStopping } from './runner-errors.ts';
export { STAGES, type StageStep, stepFor } from './stage-list.ts';
export { BASE64_MAX_BYTES, INLINE_INPUT_DATA } from './stages/upload.ts';
export {
  keyFingerprint,
  newFileWork,
  type PlanOptions,
  type QuotaState,
  type QuotaStateInput,
  recordedOptions,
  type Store,
  type StoreDecision,
} from './store/index.ts';
export {
  defaultJournalPath,
  EMBEDDED_IDENTITY,
  EMBEDDED_REDO_REASON,
  formerServiceIdentities,
  JOURNAL_FILE,
  JOURNAL_TEXTS,
  type Journal,
  JournalFileError,
  JournalLockedError,
  type JournalRunHooks,
  journalRunHooks,
  NetworkFilesystemError,
  type OpenJournalOptions,
  openJournal,
  RERUN_TEXTS,
  redoneOnEmbedded,
  runnerLockHeld,
  STATUS_KIND_KEYS,
  type StatusContext,
  type StatusFailure,
  type StatusKind,
  type StatusSummary,
  serviceIdentity,
  statusSummary,
} from './store/sqlite/index.ts';
export {
  checkWatchFolders,
  createReadyQueue,
  fileLeftSidecars,
  incompleteReason,
  ON_DONE_MODES,
  ON_DONE_TEXTS,
  type OnDoneMode,
  onDoneTargets,
  type ReadyFile,
  type ReadyQueue,
  readyItem,
  sameSignature,
  settleInput,
  startWatcher,
  WATCH_DEFAULTS,
  WATCH_TEXTS,
  type Watcher,
  type WatcherStats,
} from './watch/index.ts';
