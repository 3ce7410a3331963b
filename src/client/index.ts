/**
 * genpipe's client of the generation service (both surfaces), on undici. Import from here only.
 * See src/client/README.md for the contract.
 */
export {
  type CallbackReceiver,
  type CallbackReceiverOptions,
  type LegacyCallback,
  startCallbackReceiver,
  verifyCallbackSignature,
} from './callback-receiver.ts';
export { type ClientOptions, createClient, type GenpipeClient } from './client.ts';
export {
  type AcquireOptions,
  ConcurrencyGovernor,
  type GovernorOptions,
  slowStartRoom,
} from './concurrency-governor.ts';
export { type DownloadedOutput, type DownloadOptions, outputFileName } from './download-outputs.ts';
export { EMULATOR_MEDIA_TEXTS, EmulatorMedia, EmulatorOnlyError } from './emulator-media.ts';
export {
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  CreateNotSentError,
  detailOf,
  type ErrorFields,
  errorFromResponse,
  type FailedGenerationLike,
  FileFailedError,
  GenerationFailedError,
  GenpipeError,
  InsufficientBalanceError,
  LOCAL_WRITE_CODES,
  LocalWriteError,
  LostResponseError,
  LostUploadError,
  NotFoundError,
  PermissionError,
  PreflightError,
  parseRetryAfter,
  RateLimitError,
  type RateLimitKind,
  SharedQuotaError,
  SizeMismatchError,
  TimeoutError,
  TooLargeError,
  UnprocessableError,
  UpstreamError,
} from './errors.ts';
export {
  Files,
  type FileWaitOptions,
  type ListFilesOptions,
  type UploadMode,
  type UploadOptions,
  type UploadResult,
  uploadModeFor,
} from './files.ts';
export {
  GenerationPoller,
  POLLER_DEFAULTS,
  type PollerOptions,
  type PollWaitOptions,
} from './generation-poller.ts';
export { type CreateOptions, Generations, type ResubmitOptions, type WaitOptions } from './generations.ts';
export {
  expectFrom,
  JOB_DURATIONS_KEPT,
  type JobDurationSample,
  type JobDurations,
  jobKindOf,
  RecentJobDurations,
  type RecentJobDurationsOptions,
} from './job-durations.ts';
export { preflightLegacy } from './legacy/calls.ts';
export type {
  LegacyAudioInput,
  LegacyCreateOptions,
  LegacyCredits,
  LegacyGenerationList,
  LegacyImageInput,
  LegacyKeyframe,
  LegacyReframeImageInput,
  LegacyReframeVideoInput,
  LegacyUpscaleInput,
  LegacyVideoInput,
} from './legacy/inputs.ts';
export { Legacy, legacyAsGeneration } from './legacy.ts';
export { Pacer, type PacerOptions } from './pacer.ts';
export {
  adaptiveDelay,
  DEFAULT_POLL_SETTINGS,
  firstReadAt,
  POLL_SCHEDULES,
  type PollScheduleName,
  type PollSettings,
  pollDelay,
} from './poll-schedule.ts';
export { preflightGeneration, preflightModify } from './preflight.ts';
export {
  createRedactor,
  credentialUrlProblem,
  MIN_SECRET_LENGTH,
  maskUrlPassword,
  REDACTED,
  REDACTOR_DEFAULTS,
  type Redact,
  type RedactorOptions,
  redactDeep,
  redactShapes,
  urlPasswordSpan,
} from './redact.ts';
export { requestUrl, withoutUserinfo } from './request-url.ts';
export {
  backoffDelay,
  DEFAULT_RETRY_POLICY,
  type DelayRange,
  type RetryBudget,
  type RetryClass,
  type RetryPolicy,
  resolveRetryPolicy,
  resubmitDelay,
  retryBudget,
  retryDelay,
  shouldRetry,
} from './retry-policy.ts';
export type { ClientHooks, RetryInfo, TransferInfo } from './retrying-call.ts';
export type { SharedJobSlotAnswer, SharedQuota, SharedSlotAnswer, SharedWindow } from './shared-quota.ts';
export { abortReason, sleep, throwIfAborted } from './sleep.ts';
export type {
  ApiFile,
  ApiFileList,
  CreateFileResponse,
  FilePurpose,
  FileState,
  Generation,
  GenerationOutput,
  GenerationRequest,
  ImageRef,
  Layer,
  LayerBounds,
  LegacyAssets,
  LegacyGeneration,
  ModifyVideoInput,
  PresignedUpload,
  VideoOptions,
} from './types.ts';
