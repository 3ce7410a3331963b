/**
 * STUB — media helpers shared by the emulator and the pipeline (no service contract here):
 * binary resolution for ffmpeg/ffprobe, probing, and sniffing real types from bytes.
 */

export interface SniffResult {
  mime: string;
  ext: string;
  kind: 'image' | 'video' | 'other';
}

/** Path of the ffmpeg binary: $GENPIPE_FFMPEG_PATH when set, else the one from @ffmpeg-installer/ffmpeg. */
export function ffmpegPath(): string {
  throw new Error('not implemented');
}

/** Path of the ffprobe binary: $GENPIPE_FFPROBE_PATH when set, else the one from @ffprobe-installer/ffprobe. */
export function ffprobePath(): string {
  throw new Error('not implemented');
}

export interface VideoProbe {
  durationSeconds: number;
  width: number;
  height: number;
  codec: string;
  fps: number;
}

/** ffprobe a video file; rejects with a plain reason when it cannot be decoded. */
export async function probeVideo(_path: string): Promise<VideoProbe> {
  throw new Error('not implemented');
}

/** Sniffs the real type from the file's first bytes (file-type); null when unknown. Reads only the head. */
export async function sniffFile(_path: string): Promise<SniffResult | null> {
  throw new Error('not implemented');
}

export interface ImageHeader {
  width: number;
  height: number;
  format: string;
}

/** Reads an image's header with sharp (no full decode); rejects with a plain reason when not decodable. */
export async function readImageHeader(_path: string): Promise<ImageHeader> {
  throw new Error('not implemented');
}
