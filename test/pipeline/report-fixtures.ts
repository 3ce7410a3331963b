/**
 * A small hand-made batch for the report tests: one item per kind of outcome, with real (tiny) input
 * and output files when asked for.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { runFfmpeg } from '../../src/media/index.ts';
import { type Item, type ItemAttempt, newItem, type StageName } from '../../src/pipeline/item.ts';
import { patchItem } from '../helpers/item-patch.ts';

export const T0 = Date.UTC(2026, 0, 2, 12, 0, 0);
export const SECRET = 'svc-api-super-secret-key-123';
export const XSS_NAME = '<script>alert(1)</script>.png';
export const XSS_REASON = 'image could not be decoded: <img src=x onerror=alert(2)>';
export const INLINE_DATA = 'A'.repeat(1234);

function timed(stages: [StageName, number, number | undefined][]): Item['timings'] {
  const t: Item['timings'] = {};
  for (const [s, from, to] of stages) {
    t[s] = to === undefined ? { started_at: T0 + from } : { started_at: T0 + from, finished_at: T0 + to };
  }
  return t;
}

function base(input: string, inDir: string, size = 100): Item {
  return newItem(input, join(inDir, ...input.split('/')), size, T0);
}

/** The batch's items (no files are made). */
/** The attempts photos/moderated.jpg had before its last generation (one reason holds markup). */
export const EARLIER_ATTEMPTS: ItemAttempt[] = [
  {
    generation_id: 'gen-mod-0',
    request_id: 'req-mod-0',
    failure_code: 'generation_failed',
    failure_reason: 'The generation failed <b>upstream</b>.',
  },
  {
    generation_id: null,
    request_id: 'req-mod-lost',
    failure_code: null,
    failure_reason: 'submission outcome unknown; resubmitted (--resubmit-unknown)',
  },
];

export function batchItems(inDir = '/in'): Item[] {
  const ok: Item = patchItem(base('photos/a.jpg', inDir), {
    state: 'reported',
    sniff: { mime: 'image/png', ext: 'png', kind: 'image' },
    media: { width: 16, height: 12, bytes: 100 },
    rule: { index: 0, match: '**/*.jpg' },
    inputAs: 'source',
    request: {
      type: 'image_edit',
      model: 'uni-1',
      prompt: 'watercolor, soft light',
      source: { data: INLINE_DATA, media_type: 'image/png' },
      image_ref: [{ file_id: 'f-ref' }, { data: 'QUJD', media_type: 'image/png' }],
    },
    upload: { mode: 'base64', fileId: null, sha256: null },
    generationId: 'gen-ok',
    requestId: 'req-ok',
    generation: { state: 'completed', failure_code: null, failure_reason: null },
    outputs: ['photos/a.jpg/output-0.png'],
    timings: timed([
      ['sniff', 0, 5],
      ['check', 5, 12],
      ['plan', 12, 13],
      ['upload', 13, 40],
      ['submit', 40, 60],
      ['wait', 60, 1500],
      ['download', 1500, 1600],
      ['report', 1600, 1610],
    ]),
  });
  const stack: Item = patchItem(base('photos/stack.png', inDir), {
    state: 'reported',
    sniff: { mime: 'image/png', ext: 'png', kind: 'image' },
    inputAs: 'source',
    request: { type: 'image_edit', model: 'uni-1', prompt: 'split into layers', source: { file_id: 'f-1' } },
    upload: { mode: 'inline', fileId: 'f-1', sha256: 'abc' },
    generationId: 'gen-stack',
    requestId: 'req-stack',
    generation: { state: 'completed', failure_code: null, failure_reason: null },
    outputs: ['photos/stack.png/layer-0.png', 'photos/stack.png/layer-1.png'],
    layers: [
      {
        path: 'photos/stack.png/layer-0.png',
        alpha_hint: 'hard',
        description: 'foreground',
        index: 0,
        bounds: { canvas_width: 16, canvas_height: 12, x: 2, y: 2, width: 4, height: 4 },
      },
      {
        path: 'photos/stack.png/layer-1.png',
        alpha_hint: 'none',
        description: 'background',
        index: 1,
        bounds: { canvas_width: 16, canvas_height: 12, x: 0, y: 0, width: 16, height: 12 },
      },
    ],
    composite: 'photos/stack.png/composite.png',
    timings: timed([
      ['sniff', 2, 6],
      ['upload', 20, 50],
      ['wait', 70, 1900],
      ['download', 1900, 2000],
    ]),
  });
  const empty: Item = {
    ...base('bad/empty.png', inDir, 0),
    state: 'failed',
    failedAt: 'check',
    reason: 'image could not be decoded: file is empty',
    sniff: null,
    timings: timed([
      ['sniff', 1, 2],
      ['check', 2, 3],
    ]),
  };
  const moderated: Item = patchItem(base('photos/moderated.jpg', inDir), {
    state: 'failed',
    failedAt: 'wait',
    reason: 'The prompt or an input image violated the content guidelines.',
    sniff: { mime: 'image/png', ext: 'png', kind: 'image' },
    request: { type: 'image_edit', prompt: 'something', source: { file_id: 'f-2' } },
    generationId: 'gen-mod',
    requestId: 'req-mod',
    generation: {
      state: 'failed',
      failure_code: 'content_moderated',
      failure_reason: 'The prompt or an input image violated the content guidelines.',
    },
    earlierAttempts: EARLIER_ATTEMPTS,
    timings: timed([['wait', 80, 900]]),
  });
  const xss: Item = {
    ...base(`weird/${XSS_NAME}`, inDir),
    state: 'failed',
    failedAt: 'check',
    reason: XSS_REASON,
    timings: timed([['check', 3, 4]]),
  };
  const skipped: Item = {
    ...base('notes/readme.md', inDir),
    state: 'skipped',
    reason: "no recipe rule matches 'notes/readme.md'",
  };
  const prompt: Item = patchItem(base('prompts/sunset.txt', inDir), {
    state: 'reported',
    sniff: { mime: 'text/plain', ext: 'txt', kind: 'text' },
    inputAs: 'prompt',
    request: { type: 'image', model: 'uni-1', prompt: `a sunset over <b>the sea</b> ${SECRET}` },
    generationId: 'gen-prompt',
    requestId: 'req-prompt',
    generation: { state: 'completed', failure_code: null, failure_reason: null },
    outputs: ['prompts/sunset.txt/output-0.png'],
    timings: timed([
      ['plan', 1, 2],
      ['submit', 2, 30],
      ['wait', 30, 1200],
      ['download', 1200, 1250],
    ]),
  });
  const video: Item = patchItem(base('clips/v.mp4', inDir), {
    state: 'reported',
    sniff: { mime: 'video/mp4', ext: 'mp4', kind: 'video' },
    media: { width: 64, height: 36, durationSeconds: 1, bytes: 100 },
    inputAs: 'source',
    request: { type: 'video_reframe', model: 'ray-3.2', aspect_ratio: '9:16', source: { file_id: 'f-3' } },
    generationId: 'gen-video',
    requestId: 'req-video',
    generation: { state: 'completed', failure_code: null, failure_reason: null },
    outputs: ['clips/v.mp4/output-0.mp4'],
    timings: timed([
      ['upload', 10, 100],
      ['wait', 120, 2500],
      ['download', 2500, 2600],
    ]),
  });
  const unprocessed: Item = {
    ...base('later/b.jpg', inDir),
    state: 'stopped',
    reason: null,
  };
  const pending: Item = patchItem(base('later/c.jpg', inDir), {
    state: 'submitted',
    generationId: 'gen-pending',
    timings: timed([['wait', 2000, undefined]]),
  });
  return [ok, stack, empty, moderated, xss, skipped, prompt, video, unprocessed, pending];
}

async function png(path: string, w: number, h: number, alpha = false): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await sharp({
    create: {
      width: w,
      height: h,
      channels: alpha ? 4 : 3,
      background: { r: 200, g: 80, b: 40, alpha: 0.6 },
    },
  })
    .png()
    .toFile(path);
}

async function mp4(path: string): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await runFfmpeg([
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=64x36:rate=12:duration=1',
    '-pix_fmt',
    'yuv420p',
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    path,
  ]);
}

/** Makes the batch's input and output files under `inDir` and `outDir`; returns its items. */
export async function makeBatchFiles(inDir: string, outDir: string): Promise<Item[]> {
  const items = batchItems(inDir);
  await png(join(inDir, 'photos/a.jpg'), 16, 12);
  await png(join(inDir, 'photos/stack.png'), 16, 12);
  await png(join(inDir, 'photos/moderated.jpg'), 16, 12);
  await mkdir(join(inDir, 'bad'), { recursive: true });
  await writeFile(join(inDir, 'bad/empty.png'), '');
  await png(join(inDir, 'weird', XSS_NAME), 8, 8);
  await mkdir(join(inDir, 'notes'), { recursive: true });
  await writeFile(join(inDir, 'notes/readme.md'), '# hi\n');
  await mkdir(join(inDir, 'prompts'), { recursive: true });
  await writeFile(join(inDir, 'prompts/sunset.txt'), 'a sunset over the sea\n');
  await mp4(join(inDir, 'clips/v.mp4'));
  await png(join(outDir, 'photos/a.jpg/output-0.png'), 16, 12);
  await png(join(outDir, 'photos/stack.png/layer-0.png'), 4, 4, true);
  await png(join(outDir, 'photos/stack.png/layer-1.png'), 16, 12);
  await png(join(outDir, 'photos/stack.png/composite.png'), 16, 12, true);
  await png(join(outDir, 'prompts/sunset.txt/output-0.png'), 16, 9);
  await mp4(join(outDir, 'clips/v.mp4/output-0.mp4'));
  return items;
}
