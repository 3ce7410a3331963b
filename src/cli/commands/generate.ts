/**
 * `genpipe generate`: creates one generation from flags or a JSON request file (flags win), uploads
 * local files given as media references first, and optionally waits for it and downloads its outputs.
 * The request is checked with the service's own rules, and its local files with the pipeline's local
 * check against the rules of their positions, before anything is uploaded or sent.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { FilePurpose, GenerationRequest, ImageRef, UploadResult } from '../../client/index.ts';
import { isUuid } from '../../spec/index.ts';
import { AGAINST_SERVE, addExamples, type Examples } from '../command-examples.ts';
import {
  addPollOption,
  addServiceOptions,
  type ClientFlags,
  checkTimeoutWaits,
  REQUEST_ID_HELP,
  requestIdArg,
  secondsArg,
} from '../command-flags.ts';
import { waitAndSave } from '../generation-out.ts';
import { NotAFileError, requireFile } from '../local-path.ts';
import type { CommandContext } from '../make-client.ts';
import { checkOutDir } from '../out-dir-check.ts';
import { runWithClient } from '../run-with-client.ts';
import { UsageError } from '../usage-error.ts';
import { uploadJson, uploadPath } from './files.ts';
import { generationLines, outputsJson, waitNoting } from './generations.ts';

/** A media reference given on the command line: a reference to send, or a local file to upload first. */
export type MediaArg = { ref: ImageRef } | { path: string };

/**
 * Reads a media reference flag: `generation:<id>` (a prior generation's output), `file:<id>` or a bare
 * UUID (an uploaded file), an http(s) URL, or the path of a local file (uploaded first).
 *
 * @param text - the flag's value
 * @param flag - the flag's name, for the error
 * @throws UsageError when it is none of these
 * @example parseMediaArg('generation:6f1c...', '--source') // { ref: { generation_id: '6f1c...' } }
 */
export function parseMediaArg(text: string, flag: string): MediaArg {
  const value = text.trim();
  const prefixed = /^(generation|gen|file):(.*)$/i.exec(value);
  if (prefixed) {
    const id = (prefixed[2] ?? '').trim();
    if (!isUuid(id))
      throw new UsageError(`${flag}: expected a UUID after '${prefixed[1]}:' but received '${id}'`);
    return { ref: prefixed[1]?.toLowerCase() === 'file' ? { file_id: id } : { generation_id: id } };
  }
  if (isUuid(value)) return { ref: { file_id: value } };
  if (/^https?:\/\//i.test(value)) return { ref: { url: value } };
  try {
    requireFile(value, flag);
  } catch (err) {
    // A file that is there but cannot be used (a loop, a name not valid UTF-8) is said as it is.
    if (!(err instanceof NotAFileError)) throw err;
    throw new UsageError(
      `${flag}: '${text}' is not a file id, generation:<id>, an http(s) URL or an existing file`,
    );
  }
  return { path: value };
}

const VIDEO_EXTENSIONS: Readonly<Record<string, string>> = {
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
};

/** The video/* type of a URL from its path's extension, or undefined. */
export function videoTypeOfUrl(url: string): string | undefined {
  try {
    const ext = /\.([a-z0-9]+)$/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
    return ext ? VIDEO_EXTENSIONS[ext] : undefined;
  } catch {
    return undefined;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads a request file: one JSON object, the body of POST /v1/generations. @throws UsageError */
export function readRequestFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new UsageError(`--request: cannot read '${path}'`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--request: '${path}' is not valid JSON (${(err as Error).message})`);
  }
  if (!isObject(parsed)) throw new UsageError(`--request: '${path}' must hold one JSON object`);
  return parsed;
}

/** Flags of `genpipe generate`. */
export interface GenerateFlags extends ClientFlags {
  type?: string;
  model?: string;
  prompt?: string;
  aspectRatio?: string;
  style?: string;
  source?: string;
  sourceMediaType?: string;
  imageRef?: string[];
  duration?: string;
  resolution?: string;
  userId?: string;
  request?: string;
  requestId?: string;
  wait?: boolean;
  out?: string;
  timeout?: number;
}

/** A request being built: the body, and the local files to upload with where their ids go. */
export interface PlannedRequest {
  request: Record<string, unknown>;
  uploads: Array<{ path: string; flag: string; purpose: FilePurpose; place: (fileId: string) => void }>;
}

/** Stands in for a file id not yet known while the request is checked locally. */
const PLACEHOLDER_FILE_ID = '00000000-0000-4000-8000-000000000000';

/**
 * Builds the request from a request file and the flags (flags win; --duration and --resolution are
 * merged into the file's `video` object). Local files become placeholder file ids to fill after upload.
 *
 * @throws UsageError for a bad flag value or an unreadable request file
 */
export function planRequest(flags: GenerateFlags): PlannedRequest {
  const request: Record<string, unknown> = flags.request ? readRequestFile(flags.request) : {};
  const fields: Array<[keyof GenerateFlags, string]> = [
    ['type', 'type'],
    ['model', 'model'],
    ['prompt', 'prompt'],
    ['aspectRatio', 'aspect_ratio'],
    ['style', 'style'],
    ['userId', 'user_id'],
  ];
  for (const [flag, field] of fields) if (flags[flag] !== undefined) request[field] = flags[flag];
  if (flags.duration !== undefined || flags.resolution !== undefined) {
    request.video = {
      ...(isObject(request.video) ? request.video : {}),
      ...(flags.duration !== undefined ? { duration: flags.duration } : {}),
      ...(flags.resolution !== undefined ? { resolution: flags.resolution } : {}),
    };
  }
  const uploads: PlannedRequest['uploads'] = [];
  const refOf = (arg: MediaArg, flag: string, purpose: FilePurpose, set: (ref: ImageRef) => void): void => {
    if ('ref' in arg) {
      set(arg.ref);
      return;
    }
    const ref: ImageRef = { file_id: PLACEHOLDER_FILE_ID };
    set(ref);
    uploads.push({
      path: arg.path,
      flag,
      purpose,
      place: (id) => {
        ref.file_id = id;
      },
    });
  };
  if (flags.source !== undefined) {
    refOf(parseMediaArg(flags.source, '--source'), '--source', 'input', (ref) => {
      const type = request.type;
      const mediaType =
        flags.sourceMediaType ??
        (ref.url && (type === 'video_edit' || type === 'video_reframe')
          ? videoTypeOfUrl(ref.url)
          : undefined);
      // A local file's ref object is kept as is: its placeholder id is filled in after the upload.
      request.source = mediaType && (ref.url || ref.data) ? { ...ref, media_type: mediaType } : ref;
    });
  } else if (flags.sourceMediaType !== undefined) {
    throw new UsageError('--source-media-type needs --source');
  }
  if (flags.imageRef && flags.imageRef.length > 0) {
    const refs: ImageRef[] = [];
    for (const text of flags.imageRef) {
      refOf(parseMediaArg(text, '--image-ref'), '--image-ref', 'reference', (ref) => {
        refs.push(ref);
      });
    }
    request.image_ref = refs;
  }
  return { request, uploads };
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Uploads the planned local files (each path once, waited on until ready, with the type their check
 * told, by path in `mimes`) and fills in their ids.
 */
async function uploadPlanned(
  ctx: CommandContext,
  plan: PlannedRequest,
  mimes: ReadonlyMap<string, string>,
): Promise<Array<{ path: string; result: UploadResult }>> {
  const byPath = new Map<string, { path: string; result: UploadResult }>();
  for (const u of plan.uploads) {
    const key = resolve(u.path);
    let done = byPath.get(key);
    if (!done) {
      const mime = mimes.get(u.path);
      const options = { purpose: u.purpose, wait: true, ...(mime ? { mimeType: mime } : {}) };
      done = { path: u.path, result: await uploadPath(ctx, u.path, options) };
      byPath.set(key, done);
      ctx.note(`uploaded ${u.path} as file ${done.result.file.id} (${done.result.file.state})`);
    }
    u.place(done.result.file.id);
  }
  return [...byPath.values()];
}

/** Registers `genpipe generate`. */
/** `text` as one word of a POSIX shell command (quoted when it holds anything but plain characters). */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

const GENERATE_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'an image from a prompt: prints the queued generation',
      line: "genpipe generate --prompt 'a red fox in the snow' --aspect-ratio 16:9",
    },
    {
      comment: 'edit a sample photo in the style of another: uploads both, waits, downloads into out/',
      line: "genpipe generate --type image_edit --source samples/photos/beach.jpg --image-ref samples/refs/style.png --prompt 'make it blue' --out out/",
    },
    {
      comment: 'a 5 s video at 540p, waited for, as JSON',
      line: "genpipe generate --type video --prompt 'a lighthouse at dusk' --resolution 540p --wait --json",
    },
  ],
};

export function registerGenerate(program: Command): void {
  const cmd = program
    .command('generate')
    .description(
      'Create a generation from flags or --request file.json (flags win); local files given as media are uploaded first',
    )
    .option('--type <type>', 'image (default), image_edit, video, video_edit, video_reframe')
    .option('--model <model>', 'uni-1, uni-1-max (images), ray-3.2 (videos); default by type')
    .option('--prompt <text>', 'what to make (1 to 6000 characters)')
    .option(
      '--aspect-ratio <ratio>',
      "e.g. 16:9, 1:1, 9:16 (default: 1:1 for images, 16:9 for videos, the source's shape for edits; video_reframe needs one)",
    )
    .option('--style <style>', 'e.g. manga')
    .option('--source <ref>', 'the input: a file id, generation:<id>, an http(s) URL or a local file')
    .option('--source-media-type <type>', 'MIME type of a URL source (video_edit/video_reframe: video/*)')
    .option('--image-ref <ref>', 'a reference image (repeatable), same forms as --source', collect)
    .option('--duration <d>', 'video duration, type video only: 5s or 10s (default 5s)')
    .option('--resolution <r>', 'video resolution: 360p, 540p, 720p, 1080p (default 720p)')
    .option('--user-id <id>', 'opaque end-user tag')
    .option('--request <file>', 'the request body as a JSON file (flags override its fields)')
    .option('--request-id <id>', REQUEST_ID_HELP, requestIdArg('genpipe generate'))
    .option('--wait', 'wait until the generation completes (exit 1 when it fails)')
    .option(
      '--out <dir>',
      'wait, then download the outputs into <dir>/<generation id>/ and print their paths',
    )
    .option(
      '--timeout <seconds>',
      'with --wait or --out: give up waiting after this long (exit 1; default: no limit)',
      secondsArg(0),
    );
  addPollOption(addServiceOptions(addExamples(cmd, GENERATE_EXAMPLES))).action((flags: GenerateFlags) =>
    runWithClient(flags, async (ctx) => {
      checkTimeoutWaits(flags, flags.wait === true || flags.out !== undefined, '--wait or --out');
      const given = [flags.request, flags.prompt, flags.source, flags.imageRef, flags.type].some(
        (v) => v !== undefined,
      );
      if (!given)
        throw new UsageError('nothing to generate: give --prompt (and more flags) or --request file.json');
      if (flags.out !== undefined) await checkOutDir(flags.out);
      const plan = planRequest(flags);
      // The service's rules first, then the local files against the rules of their positions: nothing
      // is uploaded or sent for a request the service would refuse, or a file it would fail.
      // Loaded only now: media sniffing is no part of the command's definition (nor of its --help).
      const [{ preflightGeneration }, { checkRequestFiles }] = await Promise.all([
        import('../../client/index.ts'),
        import('../local-check.ts'),
      ]);
      await preflightGeneration(plan.request as GenerationRequest);
      const mimes = await checkRequestFiles(plan.request, plan.uploads, PLACEHOLDER_FILE_ID);
      const uploads = await uploadPlanned(ctx, plan, mimes);
      const requestId = flags.requestId ?? randomUUID();
      const created = await ctx.client.generations.create(plan.request as GenerationRequest, {
        requestId,
        signal: ctx.signal,
      });
      const { final, outputs } = await waitAndSave(ctx, created, flags, {
        created: `generation ${created.id} (request id ${requestId})`,
        interrupted:
          `generation ${created.id} goes on at the service (and is paid); collect it with: ` +
          (flags.out !== undefined
            ? `genpipe generations download ${created.id} --out ${shellWord(flags.out)} --wait`
            : `genpipe generations wait ${created.id}`),
        wait: (ms) => waitNoting(ctx, created, ms),
        download: (done, dir, o) => ctx.client.generations.download(done, dir, o),
      });
      ctx.result(
        {
          request_id: requestId,
          generation: final,
          uploads: uploads.map((u) => uploadJson(u.result, u.path)),
          ...(outputs ? { outputs: outputsJson(outputs) } : {}),
        },
        () => (outputs ? outputs.map((o) => o.path) : generationLines(final, requestId)),
      );
    }),
  );
}
