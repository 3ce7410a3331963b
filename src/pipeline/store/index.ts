/** The store interface (store.ts; its contract in README.md) and what goes with it. */

export { ItemTakenOverError } from './item-taken-over.ts';
export { keyFingerprint } from './key-fingerprint.ts';
export { recordedOptions, urlWithoutPassword } from './recorded-options.ts';
export { stepsTaken } from './step-work.ts';
export type {
  AdmitAction,
  BatchInfo,
  BatchRow,
  FileIdentity,
  FinishedFile,
  LockHolder,
  PlanOptions,
  QuotaState,
  QuotaStateInput,
  RecipeFiles,
  Store,
  StoreDecision,
  WorkIdentity,
} from './store.ts';
export { newFileWork } from './work-key.ts';
