/** Every numeric limit of the service interface, in one place. */

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

export const LIMITS = {
  promptMin: 1,
  promptMax: 6000,
  /** image_edit: source plus image_ref entries; image_ref itself at most this many. */
  imageRefMax: 8,
  /** 50 MB per input image. "MB" is read as 50 * 1024 * 1024 bytes (see choices). */
  imageMaxBytes: 50 * MiB,
  imageMaxSide: 8000,
  /** Source video duration for edit and reframe, seconds. */
  sourceVideoMaxSeconds: 30,
  /** Source video duration when video.edit is used, seconds. */
  editVideoMaxSeconds: 18,
  keyframesMin: 1,
  keyframesMax: 64,
  fps: 24,
  /** Seconds per duration value. */
  durationSeconds: { '5s': 5, '10s': 10 } as const,
  sourcePositionMaxNorm: 2.0,
  presignedMaxBytes: 5 * GiB,
  fileListDefault: 25,
  fileListMin: 1,
  fileListMax: 100,
  rateWindowSeconds: 60,
  /** Fixed Retry-After of a concurrent-jobs 429. */
  concurrencyRetryAfterSeconds: 60,
  /** Active jobs are tracked for up to this long, then pruned. */
  activeJobPruneSeconds: 3600,
  outputUrlTtlSeconds: 3600,
} as const;

/** Highest keyframe index on the 24 fps grid for a duration: 5s → 120, 10s → 240. */
export function maxFrameIndex(duration: '5s' | '10s'): number {
  return LIMITS.durationSeconds[duration] * LIMITS.fps;
}
