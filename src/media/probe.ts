/**
 * Probing videos with ffprobe (through fluent-ffmpeg): duration, frame size, codec and frame rate.
 * ffprobe reads the container headers and a few packets; the file is never loaded into memory.
 */
import { stat } from 'node:fs/promises';
import ffmpeg from 'fluent-ffmpeg';
import { ffprobePath } from './ffmpeg-path.ts';
import { MediaError, plainWhy } from './media-error.ts';

export interface VideoProbe {
  durationSeconds: number;
  /** Displayed width (after any rotation the container asks for). */
  width: number;
  /** Displayed height (after any rotation the container asks for). */
  height: number;
  /** Codec name as ffprobe gives it, e.g. 'h264'. */
  codec: string;
  /** Average frame rate, frames per second. */
  fps: number;
  /** Number of frames when the container records it. */
  frames?: number;
  /** Pixel format, e.g. 'yuv420p', when known. */
  pixelFormat?: string;
  /** Container format names, e.g. 'mov,mp4,m4a,3gp,3g2,mj2'. */
  container?: string;
  /** Whether the file also carries an audio stream. */
  hasAudio?: boolean;
}

type ProbeData = ffmpeg.FfprobeData;
type ProbeStream = ffmpeg.FfprobeStream;

function ffprobe(path: string): Promise<ProbeData> {
  ffmpeg.setFfprobePath(ffprobePath());
  return new Promise((resolve, reject) => {
    ffmpeg.ffprobe(path, (err: unknown, data: ProbeData) => (err ? reject(err) : resolve(data)));
  });
}

/** "24/1" or "30000/1001" → number; NaN when absent or 0/0. */
function parseRate(rate: unknown): number {
  if (typeof rate === 'number') return rate;
  if (typeof rate !== 'string') return Number.NaN;
  const [n, d] = rate.split('/').map(Number);
  if (n === undefined || !Number.isFinite(n)) return Number.NaN;
  if (d === undefined) return n;
  return d > 0 ? n / d : Number.NaN;
}

function positive(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** Rotation in degrees the container asks a player to apply (tags.rotate or a display matrix). */
function rotationOf(stream: ProbeStream): number {
  const candidates: unknown[] = [stream.tags?.rotate, stream.rotation];
  const sideData = (stream as { side_data_list?: Array<{ rotation?: unknown }> }).side_data_list;
  if (Array.isArray(sideData)) for (const sd of sideData) candidates.push(sd.rotation);
  for (const c of candidates) {
    const n = typeof c === 'number' ? c : typeof c === 'string' ? Number(c) : Number.NaN;
    if (Number.isFinite(n) && n !== 0) return n;
  }
  return 0;
}

function isImageContainer(formatName: string): boolean {
  return formatName === 'image2' || formatName.endsWith('_pipe');
}

/**
 * ffprobes a video file. Rejects with a MediaError whose message is a plain reason when the file is
 * missing, cannot be decoded, is a still image, or has no video stream.
 *
 * @param path a local file path
 * @example const { durationSeconds, width, height, fps } = await probeVideo('clip.mp4');
 */
export async function probeVideo(path: string): Promise<VideoProbe> {
  const size = await stat(path).then(
    (st) => (st.isFile() ? st.size : -1),
    () => -1,
  );
  if (size < 0) throw new MediaError('missing', 'video file not found');
  if (size === 0) throw new MediaError('corrupt', 'video could not be decoded: file is empty');
  let data: ProbeData;
  try {
    data = await ffprobe(path);
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    if (/Cannot find ffprobe|ENOENT.*ffprobe|spawn .*ffprobe/i.test(text)) {
      throw new MediaError('tool', 'ffprobe could not be started');
    }
    throw new MediaError('corrupt', `video could not be decoded: ${plainWhy(text)}`);
  }
  const formatName = String(data.format?.format_name ?? '');
  const video = data.streams.find((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1);
  if (isImageContainer(formatName)) throw new MediaError('unsupported', 'file is not a video');
  if (!video) throw new MediaError('unsupported', 'file has no video stream');
  let width = positive(video.width);
  let height = positive(video.height);
  if (width === null || height === null) {
    throw new MediaError('corrupt', 'video could not be decoded: frame size is unknown');
  }
  if (Math.abs(rotationOf(video)) % 180 === 90) [width, height] = [height, width];
  const durationSeconds = positive(data.format?.duration) ?? positive(video.duration);
  if (durationSeconds === null) {
    throw new MediaError('corrupt', 'video could not be decoded: duration is unknown');
  }
  let fps = parseRate(video.avg_frame_rate);
  if (!(fps > 0)) fps = parseRate(video.r_frame_rate);
  const frames = positive(video.nb_frames);
  const probe: VideoProbe = {
    durationSeconds,
    width,
    height,
    codec: String(video.codec_name ?? 'unknown'),
    fps: Number.isFinite(fps) && fps > 0 ? fps : 0,
    container: formatName,
    hasAudio: data.streams.some((s) => s.codec_type === 'audio'),
  };
  if (frames !== null) probe.frames = Math.round(frames);
  if (typeof video.pix_fmt === 'string') probe.pixelFormat = video.pix_fmt;
  return probe;
}
