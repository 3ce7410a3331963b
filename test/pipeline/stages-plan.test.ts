import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Item, stepOf } from '../../src/pipeline/item.ts';
import type { StageContext } from '../../src/pipeline/stage.ts';
import { PLAN_REASONS, plan } from '../../src/pipeline/stages/plan.ts';
import { sniff } from '../../src/pipeline/stages/sniff.ts';
import { PROMPT_LENGTH_DETAIL } from '../../src/spec/index.ts';
import { makeImage, makeVideo, tempDir } from '../media/fixtures.ts';
import { contextFor, itemFor, put } from './stage-helpers.ts';

let dir: string;
let remove: () => Promise<void>;
let ctx: StageContext;

/** A small PNG. */
function png(): Promise<Buffer> {
  return sharp({ create: { width: 12, height: 8, channels: 3, background: '#3060c0' } })
    .png()
    .toBuffer();
}

const RECIPE = `rules:
  - match: "edit/**"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor", image_ref: [{ ref: style }] }
  - match: "reframe/**"
    request: { type: video_reframe, aspect_ratio: "9:16" }
  - match: "start/**"
    input_as: start_frame
    request: { type: video, prompt: "take off" }
  - match: "end/**"
    input_as: end_frame
    request: { type: video, prompt: "land", video: { resolution: 540p } }
  - match: "like/**"
    input_as: image_ref
    request: { type: image, prompt: "like this", image_ref: [{ ref: style }] }
  - match: "prompts/**"
    input_as: prompt
    request: { type: image, aspect_ratio: "16:9" }
  - match: "mixed/**"
    request: { type: image_edit }
references:
  style: refs/style.png
`;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-plan-'));
  await put(dir, 'refs/.keep', '');
  await makeImage(join(dir, 'refs', 'style.png'), { width: 8, height: 8 });
  for (const rel of ['edit/a.png', 'start/a.png', 'end/a.png', 'like/a.png', 'mixed/a.png', 'other.gif']) {
    await put(dir, rel, await png());
  }
  await put(dir, 'reframe/.keep', '');
  await makeVideo(join(dir, 'reframe', 'clip.mp4'), { seconds: 1, fps: 4, width: 64, height: 36 });
  ctx = await contextFor(dir, RECIPE);
});
afterAll(() => remove());

async function planned(rel: string): Promise<Item> {
  const item = await sniff(await itemFor(dir, rel), ctx);
  expect(item.state).toBe('sniffed');
  return plan(item, ctx);
}

describe('stage plan places the file by input_as', () => {
  it('source of image_edit, with the shared reference as a placeholder', async () => {
    const item = await planned('edit/a.png');
    expect(item).toMatchObject({ state: 'planned', inputAs: 'source', rule: { index: 0, match: 'edit/**' } });
    expect(stepOf(item).request).toEqual({
      type: 'image_edit',
      model: 'uni-1',
      prompt: 'watercolor',
      image_ref: [{ file_id: '$ref:style' }],
      source: { file_id: '$input' },
    });
  });

  it('source of video_reframe by default, with media_type from the sniff', async () => {
    const item = await planned('reframe/clip.mp4');
    expect(item.inputAs).toBe('source');
    expect(stepOf(item).request).toEqual({
      type: 'video_reframe',
      aspect_ratio: '9:16',
      source: { file_id: '$input', media_type: 'video/mp4' },
    });
  });

  it('start_frame and end_frame of video', async () => {
    expect(stepOf(await planned('start/a.png')).request).toEqual({
      type: 'video',
      prompt: 'take off',
      video: { start_frame: { file_id: '$input' } },
    });
    expect(stepOf(await planned('end/a.png')).request).toEqual({
      type: 'video',
      prompt: 'land',
      video: { resolution: '540p', end_frame: { file_id: '$input' } },
    });
  });

  it('image_ref: appended after the request’s own references', async () => {
    const item = await planned('like/a.png');
    expect(item.inputAs).toBe('image_ref');
    expect(stepOf(item).request?.image_ref).toEqual([{ file_id: '$ref:style' }, { file_id: '$input' }]);
  });

  it('prompt: the trimmed text of the file becomes the prompt', async () => {
    await put(dir, 'prompts/sunset.txt', '\ufeff  a red sunset over the sea, 水彩 \n\n');
    const item = await planned('prompts/sunset.txt');
    expect(item).toMatchObject({ state: 'planned', inputAs: 'prompt' });
    expect(stepOf(item).request).toEqual({
      type: 'image',
      aspect_ratio: '16:9',
      prompt: 'a red sunset over the sea, 水彩',
    });
  });

  it('without input_as, a text file is the prompt and an image goes where the type puts it', async () => {
    await put(dir, 'mixed/notes.txt', 'make it blue');
    await put(dir, 'mixed/b.png.json', '{ "prompt": "make it green" }');
    await put(dir, 'mixed/b.png', await png());
    expect(stepOf(await planned('mixed/notes.txt')).request).toEqual({
      type: 'image_edit',
      prompt: 'make it blue',
    });
    expect(stepOf(await planned('mixed/b.png')).request).toEqual({
      type: 'image_edit',
      prompt: 'make it green',
      source: { file_id: '$input' },
    });
    // mixed/a.png has no sidecar, and the rule no prompt: the service's own text.
    expect(await planned('mixed/a.png')).toMatchObject({
      state: 'failed',
      failedAt: 'plan',
      reason: `${PROMPT_LENGTH_DETAIL} (there is no prompt: rules[6] "mixed/**" gives none, and no sidecar)`,
    });
  });

  it('names the sidecar a failing value came from', async () => {
    await put(dir, 'edit/m.png', await png());
    await put(dir, 'edit/m.png.json', '{ "model": "ray-3.2" }');
    expect((await planned('edit/m.png')).reason).toBe(
      "Type 'image_edit' is not supported for model 'ray-3.2' (model set by the sidecar edit/m.png.json)",
    );
    await put(dir, 'edit/n.png', await png());
    await put(dir, 'edit/n.png.json', '{ "prompt": null }');
    expect((await planned('edit/n.png')).reason).toBe(
      `${PROMPT_LENGTH_DETAIL} (there is no prompt: the sidecar edit/n.png.json removes it with "prompt": null)`,
    );
  });
});

describe('stage plan: rules and sidecars', () => {
  it('skips a file no rule matches, whatever it holds', async () => {
    expect(await planned('other.gif')).toMatchObject({
      state: 'skipped',
      reason: 'matches no recipe rule',
      rule: null,
    });
    await put(dir, 'empty.bin', '');
    expect(await planned('empty.bin')).toMatchObject({ state: 'skipped', reason: PLAN_REASONS.noRule });
  });

  it('merges a sidecar over the rule: objects deeply, arrays replaced, null removes', async () => {
    await put(dir, 'edit/side.png', await png());
    await put(
      dir,
      'edit/side.png.json',
      JSON.stringify({ prompt: 'ink', model: null, image_ref: [], style: 'manga', aspect_ratio: '9:16' }),
    );
    const item = await planned('edit/side.png');
    expect(item.state).toBe('planned');
    expect(stepOf(item).request).toEqual({
      type: 'image_edit',
      prompt: 'ink',
      image_ref: [],
      style: 'manga',
      aspect_ratio: '9:16',
      source: { file_id: '$input' },
    });
    await put(dir, 'end/side.png', await png());
    await put(dir, 'end/side.png.json', '{"video": {"duration": "10s"}}');
    expect(stepOf(await planned('end/side.png')).request).toEqual({
      type: 'video',
      prompt: 'land',
      video: { resolution: '540p', duration: '10s', end_frame: { file_id: '$input' } },
    });
  });

  it('fails only the item whose sidecar is broken, naming the sidecar', async () => {
    await put(dir, 'edit/broken.png', await png());
    await put(dir, 'edit/broken.png.json', '{\n  "prompt": "ink",\n  "style": \n}');
    const item = await planned('edit/broken.png');
    expect(item).toMatchObject({ state: 'failed', failedAt: 'plan', rule: { index: 0 } });
    expect(item.reason).toMatch(/^sidecar edit\/broken\.png\.json is not valid JSON: /);
    await put(dir, 'edit/broken.png.json', '["prompt"]');
    expect((await planned('edit/broken.png')).reason).toBe(
      'sidecar edit/broken.png.json must hold a JSON object of request fields, not an array',
    );
    await put(dir, 'edit/broken.png.json', '{"image_ref": [{"ref": "nope"}]}');
    expect((await planned('edit/broken.png')).reason).toBe(
      "sidecar edit/broken.png.json: image_ref[0].ref: no reference named 'nope' (known: style)",
    );
    await put(dir, 'edit/broken.png.json', '{"source": {"url": "https://example.com/x.png"}}');
    expect((await planned('edit/broken.png')).reason).toBe(
      `sidecar edit/broken.png.json sets source, but input_as 'source' puts the file there`,
    );
    // The batch goes on: the neighbour without a sidecar plans fine.
    expect((await planned('edit/a.png')).state).toBe('planned');
  });

  it("fails with the service's exact detail when the merged request is invalid, naming the sidecar", async () => {
    await put(dir, 'edit/broken.png.json', '{"aspect_ratio": "7:3"}');
    expect((await planned('edit/broken.png')).reason).toBe(
      "Invalid aspect_ratio '7:3'. Valid: 16:9, 1:1, 1:2, 1:3, 2:1, 2:3, 3:1, 3:2, 9:16 (aspect_ratio set by the sidecar edit/broken.png.json)",
    );
    await put(dir, 'edit/broken.png.json', '{"model": "uni-9"}');
    expect((await planned('edit/broken.png')).reason).toBe(
      'Unknown model: uni-9. Valid: uni-1, uni-1-max, ray-3.2 (model set by the sidecar edit/broken.png.json)',
    );
    await put(dir, 'edit/broken.png.json', '{"style": "manga", "aspect_ratio": "16:9"}');
    expect((await planned('edit/broken.png')).reason).toBe(
      "aspect_ratio='16:9' is not allowed when style='manga'. Valid aspect_ratio: 1:2, 1:3, 2:3, 9:16 (style, aspect_ratio set by the sidecar edit/broken.png.json)",
    );
  });
});

describe('stage plan: files that cannot take their position', () => {
  it('fails an empty or unknown file a rule claims', async () => {
    await put(dir, 'edit/empty.png', '');
    expect(await planned('edit/empty.png')).toMatchObject({ state: 'failed', reason: 'file is empty' });
    await put(dir, 'edit/noise.png', Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 9]));
    expect((await planned('edit/noise.png')).reason).toBe(
      'unknown type: the bytes are not an image, a video or UTF-8 text (matched rules[0] "edit/**"); ' +
        "genpipe sends images, videos and UTF-8 text only: leave it out with --exclude 'edit/noise.png' or narrow the rule's match",
    );
    // a PNG signature alone is a PNG cut short, not unknown bytes
    await put(dir, 'edit/sig.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(await planned('edit/sig.png')).toMatchObject({ state: 'planned' });
  });

  it('fails a file of the wrong kind for its position', async () => {
    await put(dir, 'edit/notes.png', 'this is text, not a picture');
    expect((await planned('edit/notes.png')).reason).toBe(
      `wrong type: the file is text, but rules[0] "edit/**" uses it as source of type 'image_edit', which takes an image`,
    );
    await put(dir, 'reframe/still.mp4', await png());
    expect((await planned('reframe/still.mp4')).reason).toBe(
      `wrong type: the file is an image (image/png), but rules[1] "reframe/**" uses it as source of type 'video_reframe', which takes a video`,
    );
    await put(dir, 'prompts/pic.png', await png());
    expect((await planned('prompts/pic.png')).reason).toBe(
      `wrong type: the file is an image (image/png), but rules[5] "prompts/**" uses it as the prompt of type 'image', which takes a UTF-8 text file`,
    );
  });

  it('fails a prompt file that is blank or longer than 6000 characters with the service text', async () => {
    await put(dir, 'prompts/blank.txt', '  \n\t\n');
    expect((await planned('prompts/blank.txt')).reason).toBe(
      `${PROMPT_LENGTH_DETAIL} (the prompt file is empty or holds only whitespace)`,
    );
    await put(dir, 'prompts/long.txt', 'é'.repeat(6001));
    expect((await planned('prompts/long.txt')).reason).toBe(
      `${PROMPT_LENGTH_DETAIL} (the prompt file holds 6001 characters)`,
    );
    await put(dir, 'prompts/max.txt', 'é'.repeat(6000));
    expect((await planned('prompts/max.txt')).state).toBe('planned');
  });
});
