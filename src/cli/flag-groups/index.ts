/** Flag groups: each group's flags declared once, with their parse and resolve steps (see group.ts). */
export { CONNECTION } from './connection.ts';
export { DASHBOARD } from './dashboard.ts';
export { addFlagGroups, type FlagDefinition, FlagGroup } from './group.ts';
export { JOURNAL } from './journal.ts';
export { checkMetricsHost, METRICS, METRICS_DEFAULT_HOST } from './metrics.ts';
export { type OutputHelp, outputGroup } from './output.ts';
export {
  collect,
  intArg,
  MAX_FLAG_SECONDS,
  portArg,
  positiveSeconds,
  secondsArg,
} from './parsers.ts';
export {
  checkFilesAtOnce,
  checkPollingFlags,
  MAX_POLL_INTERVAL_S,
  MAX_RATE_WINDOW_S,
  POLLING,
  type PollingFlags,
  pollIntervalMsOf,
  pollingSettings,
  type RunnerPacing,
  type RunSettings,
  runnerPacing,
} from './polling.ts';
export { SELECTION } from './selection.ts';
