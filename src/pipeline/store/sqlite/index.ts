/**
 * The journal: the crash-safe record of every item's progress, the SQLite adapter of the store engine
 * (see journal.ts for how a run uses it), and the store's rules it is used with (../resume-decision.ts
 * for what a re-run does with each file, ../crash-policy.ts for a create whose outcome is unknown).
 */
export { fileIdentity, type HashCache, hashWithCache, sha256File } from '../content-hash.ts';
export { type UnknownSubmissionOutcome, unknownSubmissionPolicy } from '../crash-policy.ts';
export { EMBEDDED_IDENTITY, EMBEDDED_REDO_REASON, redoneOnEmbedded } from '../embedded-redo.ts';
export {
  isOutcomeUnknown,
  type JournalKey,
  type JournalPhase,
  type JournalRow,
  liveStateOf,
  phaseOf,
} from '../journal-row.ts';
export {
  assertLocalDisk,
  type MountEntry,
  mountOf,
  NetworkFilesystemError,
  networkMountOf,
  parseMountInfo,
} from '../local-disk.ts';
export { checkOutputs, measureOutputs, type OutputCheck, type RecordedOutput } from '../outputs-check.ts';
export { canonicalJson, RECIPE_HASH_VERSION, recipeHash, referencesUsed } from '../recipe-hash.ts';
export { decide, type JournalAction, type JournalDecision } from '../resume-decision.ts';
export { type JournalRunHooks, journalRunHooks } from '../run-hooks.ts';
export { formerServiceIdentities, serviceIdentity } from '../service-identity.ts';
export {
  RERUN_TEXTS,
  STATUS_KIND_KEYS,
  type StatusContext,
  type StatusFailure,
  type StatusKind,
  type StatusSummary,
  statusSummary,
} from '../status-summary.ts';
export { JOURNAL_TEXTS, NETWORK_FS_TYPES } from '../texts.ts';
export {
  type BatchInfo,
  type BatchRow,
  defaultJournalPath,
  Journal,
  type OpenJournalOptions,
  openJournal,
  type PlanOptions,
  type RecipeFiles,
} from './journal.ts';
export { JOURNAL_FILE } from './journal-file.ts';
export {
  JournalLockedError,
  type LockHolder,
  runnerLockHeld,
  runnerLockPath,
} from './runner-lock.ts';
export { JournalFileError, type SynchronousMode } from './schema.ts';
