/**
 * Progress displays for PipelineEvents (live TTY, plain lines, --json lines), the factory that picks
 * one, and the redaction every printed or written text goes through.
 */
export { createProgress, type ProgressOptions } from './create-progress.ts';
export { clockTime, ellipsize, formatBytes, formatDuration, formatSize, printable } from './format.ts';
export { createJsonLinesProgress } from './json-lines.ts';
export {
  LOG_FLUSH_BYTES,
  type LogFile,
  LogFileOpenError,
  type LogRunHeader,
  openLogFile,
} from './log-file.ts';
export { createPlainProgress, type PlainOptions, plainLine } from './plain.ts';
export {
  applyEvent,
  etaMs,
  newProgressState,
  type ProgressCounts,
  type ProgressState,
  progressCounts,
  seedEarlier,
  throughputPerMinute,
} from './progress-state.ts';
export { createRedactor, REDACTED, type Redact, redactDeep, redactShapes } from './redact.ts';
export { createTtyProgress, renderTty, type TtyOptions } from './tty.ts';
export type { ProgressDisplay, ProgressStream } from './types.ts';
