/**
 * Media helpers shared by the emulator and the pipeline (no service contract here): where ffmpeg and
 * ffprobe live, running ffmpeg, probing videos, sniffing real types from bytes, reading image headers.
 */
export { FFMPEG_PATH_ENV, FFPROBE_PATH_ENV, ffmpegPath, ffprobePath } from './ffmpeg-path.ts';
export { type ImageEnd, type ImageEndVerdict, imageEnd } from './image-end.ts';
export { type ImageHeader, imageErrorFrom, readImageHeader, verifyImage } from './image-header.ts';
export { type ImageSize, readImageSize } from './image-size.ts';
export { isMediaError, MediaError, type MediaErrorCode, plainWhy } from './media-error.ts';
export { probeVideo, type VideoProbe } from './probe.ts';
export { type FileStart, readStart } from './read-start.ts';
export { type RunFfmpegOptions, runFfmpeg } from './run-ffmpeg.ts';
export {
  type MediaKind,
  mediaKindOf,
  readHead,
  SNIFF_HEAD_BYTES,
  type SniffResult,
  sniffFile,
  sniffHead,
} from './sniff.ts';
