import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findRule, isRecipeError, loadRecipe, type RecipeError } from '../../src/pipeline/recipe.ts';
import { mergeRequest } from '../../src/pipeline/recipe-request.ts';
import { writeClaimedSize } from '../media/claimed-size.ts';
import { makeImage, tempDir } from '../media/fixtures.ts';
import { put } from './stage-helpers.ts';

let dir: string;
let remove: () => Promise<void>;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-recipe-'));
  await put(dir, 'refs/.keep', '');
  await makeImage(join(dir, 'refs', 'style.png'), { width: 16, height: 12 });
  await makeImage(join(dir, 'refs', 'huge.png'), { width: 8001, height: 10 });
  await writeClaimedSize(join(dir, 'refs', 'vast.webp'), 'webp-vp8x', 60000, 60000);
  await put(dir, 'refs/notes.txt', 'not media');
});
afterAll(() => remove());

/** Loads recipe text written as `name` in the temp dir; resolves the error when it throws one. */
async function load(text: string, name = 'recipe.yaml') {
  await put(dir, name, text);
  return loadRecipe({ inputDir: dir, recipePath: join(dir, name) });
}

async function problemsOf(text: string): Promise<string[]> {
  const err = await load(text).then(
    () => null,
    (e: unknown) => e,
  );
  expect(isRecipeError(err)).toBe(true);
  return (err as RecipeError).problems.map((p) => `${p.line}: ${p.path}: ${p.message}`);
}

const ISSUE_EXAMPLE = `rules:
  - match: "**/*.{jpg,jpeg,png,webp}"   # glob on the path relative to the input dir
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor, soft light", image_ref: [{ ref: style }] }
  - match: "**/*.{mp4,mov}"
    request: { type: video_reframe, model: ray-3.2, prompt: "keep the subject", aspect_ratio: "9:16" }
  - match: "**/*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "16:9" }
references:
  style: refs/style.png
`;

describe('loading a recipe', () => {
  it('reads the issue example: rules in order, input_as, shared references as placeholders with facts', async () => {
    const recipe = await load(ISSUE_EXAMPLE);
    expect(recipe.rules.map((r) => [r.index, r.match, r.inputAs, r.line])).toEqual([
      [0, '**/*.{jpg,jpeg,png,webp}', 'source', 2],
      [1, '**/*.{mp4,mov}', null, 5],
      [2, '**/*.txt', 'prompt', 7],
    ]);
    expect(recipe.rules[0]!.request).toEqual({
      type: 'image_edit',
      model: 'uni-1',
      prompt: 'watercolor, soft light',
      image_ref: [{ file_id: '$ref:style' }],
    });
    expect(recipe.references.style).toMatchObject({
      name: 'style',
      path: 'refs/style.png',
      kind: 'image',
      mime: 'image/png',
      width: 16,
      height: 12,
    });
    expect(recipe.references.style!.absPath.endsWith(join('refs', 'style.png'))).toBe(true);
  });

  it('uses genpipe.yaml in the input dir when no --recipe is given, and refuses to guess one without it', async () => {
    const { dir: empty, remove: rmEmpty } = await tempDir('genpipe-norecipe-');
    try {
      const err = await loadRecipe({ inputDir: empty }).catch((e: unknown) => e);
      expect(isRecipeError(err)).toBe(true);
      expect((err as Error).message).toBe(
        `${join(empty, 'genpipe.yaml')}: no recipe: pass --recipe FILE, or put a genpipe.yaml in the input dir`,
      );
      await put(empty, 'genpipe.yaml', 'rules:\n  - match: "*.txt"\n    request: { type: image }\n');
      const recipe = await loadRecipe({ inputDir: empty });
      expect(recipe.rules).toHaveLength(1);
      expect(recipe.display).toBe(join(empty, 'genpipe.yaml'));
    } finally {
      await rmEmpty();
    }
  });

  it('accepts a rule without a prompt (each file may bring one in its sidecar)', async () => {
    const recipe = await load('rules:\n  - match: "*.png"\n    request: { type: image_edit }\n');
    expect(recipe.rules[0]!.inputAs).toBeNull();
  });

  it('names a missing --recipe file', async () => {
    const err = await loadRecipe({ inputDir: dir, recipePath: join(dir, 'nope.yaml') }).catch((e) => e);
    expect((err as Error).message).toBe(`${join(dir, 'nope.yaml')}: cannot read the recipe: file not found`);
  });
});

describe('recipe errors name the line and the field', () => {
  it('lists every problem at once, in line order, as <file>:<line>: <field path>: <message>', async () => {
    const text = `rules:
  - match: "**/*.png"
    input_as: sauce
    request: { type: image_edit, prompt: "x" }
  - match: 42
    request: { type: image, prompt: "x" }
  - match: "*.jpg"
    request:
      type: video
      prompt: "x"
      video:
        hdr: yes
  - match: "*.gif"
    request: { type: image, model: uni-2, prompt: "x" }
  - match: "*.webp"
    colour: red
    request: { type: image, prompt: "x" }
refrences: {}
`;
    await put(dir, 'many.yaml', text);
    const err = (await loadRecipe({ inputDir: dir, recipePath: join(dir, 'many.yaml') }).catch(
      (e) => e,
    )) as RecipeError;
    const file = join(dir, 'many.yaml');
    expect(err.message.split('\n')).toEqual([
      'the recipe has 6 problems:',
      `${file}:3: rules[0].input_as: must be one of source, start_frame, end_frame, image_ref, prompt, not 'sauce'`,
      `${file}:5: rules[1].match: must be a glob string such as "**/*.jpg", not 42`,
      `${file}:12: rules[2].request.video.hdr: Expected boolean for video.hdr but received 'yes'`,
      `${file}:14: rules[3].request.model: Unknown model: uni-2. Valid: uni-1, uni-1-max, ray-3.2`,
      `${file}:16: rules[4].colour: unknown field (a rule has match, input_as, request, steps, upload, media_url)`,
      `${file}:18: refrences: unknown field (a recipe has rules and references)`,
    ]);
  });

  it("lists the service-rule problems of a rule that has other problems too, and each of a rule's problems", async () => {
    const text = `rules:
  - match: "*.png"
    input_as: banana
    upload: fast
    request: { type: image_edit, model: uni-2, prompt: "x", image_ref: [{ ref: nope }] }
  - match: "*.mp4"
    request: { type: video_reframe, model: ray-3.2, video: { duration: 7s }, prompt: "x" }
  - match: "*.md"
    input_as: prompt
    request: { type: video, model: uni-1 }
`;
    expect(await problemsOf(text)).toEqual([
      "3: rules[0].input_as: must be one of source, start_frame, end_frame, image_ref, prompt, not 'banana'",
      "4: rules[0].upload: must be one of auto, inline, presigned, base64, not 'fast'",
      "5: rules[0].request.image_ref[0].ref: no reference named 'nope' (the recipe has no references)",
      '5: rules[0].request.model: Unknown model: uni-2. Valid: uni-1, uni-1-max, ray-3.2',
      "7: rules[1].request.video.duration: Expected one of '5s', '10s' for video.duration but received '7s'",
      "7: rules[1].request.aspect_ratio: aspect_ratio (the target shape) is required for type 'video_reframe'",
      "10: rules[2].request.type: Type 'video' is not supported for model 'uni-1'",
    ]);
  });

  it('reports YAML syntax errors and duplicate keys with their line', async () => {
    expect(await problemsOf('rules:\n  - match: "*.png"\n    match: "*.jpg"\n    request: {}\n')).toEqual([
      '3: null: Map keys must be unique',
    ]);
    const [syntax] = await problemsOf('rules:\n  - match: "*.png"\n    request: { type: image\n');
    expect(syntax).toMatch(/^[34]: null: /);
  });

  it('requires rules, a request map, and a match that stays inside the input dir', async () => {
    expect(await problemsOf('references: {}\n')).toEqual([
      "1: null: missing 'rules': a recipe needs at least one rule",
    ]);
    expect(await problemsOf('rules: []\n')).toEqual([
      '1: rules: the list is empty: a recipe needs at least one rule',
    ]);
    expect(await problemsOf('rules: "*.png"\n')).toEqual(["1: rules: must be a list of rules, not '*.png'"]);
    expect(
      await problemsOf(
        'rules:\n  - match: "../*.png"\n    request: { type: image, prompt: x }\n  - match: "*.jpg"\n    request: nope\n',
      ),
    ).toEqual([
      '2: rules[0].match: the glob is matched on the path relative to the input dir: it cannot start with / or use ..',
      "5: rules[1].request: must be a map of request fields, not 'nope'",
    ]);
  });

  it('rejects a rule whose request the service could never accept, pointing at the field or at input_as', async () => {
    expect(
      await problemsOf(
        'rules:\n  - match: "*.png"\n    input_as: source\n    request:\n      type: image\n      prompt: "x"\n',
      ),
    ).toEqual([
      "3: rules[0].input_as: source is only valid for type 'image_edit', 'video_edit', or 'video_reframe' (video_edit and video_reframe take source.generation_id of a completed video generation, source.file_id of an uploaded video, or source.url / source.data with a video/* source.media_type)",
    ]);
    expect(
      await problemsOf(
        'rules:\n  - match: "*.mp4"\n    request:\n      type: video_reframe\n      aspect_ratio: "9:16"\n      video: { resolution: 1080p }\n',
      ),
    ).toEqual([
      "6: rules[0].request.video.resolution: 1080p resolution is not yet available for vertical reframe (aspect_ratio '9:16'); use 720p or lower for now, 1080p vertical reframe is coming soon",
    ]);
  });

  it('rejects a field input_as would fill', async () => {
    expect(
      await problemsOf(
        'rules:\n  - match: "*.png"\n    request:\n      type: image_edit\n      prompt: x\n      source: { url: "https://example.com/a.png" }\n',
      ),
    ).toEqual([
      "6: rules[0].request.source: the file goes here (input_as defaults to 'source' for type 'image_edit'); remove this field or choose another input_as",
    ]);
    expect(
      await problemsOf(
        'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, prompt: x }\n',
      ),
    ).toEqual([
      "4: rules[0].request.prompt: input_as 'prompt' puts the file here; remove this field or choose another input_as",
    ]);
  });

  it('checks references: they exist, are media, are named in rules, fit their position and the limits', async () => {
    const text = `rules:
  - match: "*.png"
    request:
      type: image_edit
      prompt: x
      image_ref:
        - { ref: style }
        - { ref: nope }
        - { ref: style, weight: 1 }
references:
  style: refs/style.png
  gone: refs/missing.png
  notes: refs/notes.txt
  "bad name": refs/style.png
`;
    expect(await problemsOf(text)).toEqual([
      "8: rules[0].request.image_ref[1].ref: no reference named 'nope' (known: style, gone, notes, bad name)",
      '9: rules[0].request.image_ref[2]: a shared reference is written { ref: style } alone (remove weight)',
      "12: references.gone: refs/missing.png: file not found (paths are relative to the recipe's folder)",
      '13: references.notes: refs/notes.txt: a reference must be an image or a video',
      '14: references.bad name: a reference name is 1 to 64 letters, digits, _ or -',
    ]);
    expect(
      await problemsOf(`rules:
  - match: "*.png"
    request: { type: image_edit, prompt: x, image_ref: [{ ref: style }, { ref: nostyle }] }
references:
  style: refs/missing.png
`),
    ).toEqual([
      "3: rules[0].request.image_ref[0].ref: reference 'style' cannot be used: refs/missing.png: file not found (paths are relative to the recipe's folder)",
      "3: rules[0].request.image_ref[1].ref: no reference named 'nostyle' (known: style)",
      "5: references.style: refs/missing.png: file not found (paths are relative to the recipe's folder)",
    ]);
    expect(
      await problemsOf(
        'rules:\n  - match: "*.png"\n    request:\n      type: image_edit\n      prompt: x\n      image_ref: [{ ref: huge }]\nreferences:\n  huge: refs/huge.png\n',
      ),
    ).toEqual([
      '6: rules[0].request.image_ref[0]: image_ref[0]: image is 8001x10px but each side must be <= 8000px. Resize and try again.',
    ]);
    // A header claiming more than any decoder takes: the same text, from the header, nothing decoded.
    expect(
      await problemsOf(
        'rules:\n  - match: "*.png"\n    request:\n      type: image_edit\n      prompt: x\n      image_ref: [{ ref: vast }]\nreferences:\n  vast: refs/vast.webp\n',
      ),
    ).toEqual([
      '6: rules[0].request.image_ref[0]: image_ref[0]: image is 60000x60000px but each side must be <= 8000px. Resize and try again.',
    ]);
    expect(
      await problemsOf(
        'rules:\n  - match: "*.png"\n    input_as: image_ref\n    request:\n      type: video_reframe\n      aspect_ratio: "16:9"\n      source: { ref: style }\nreferences:\n  style: refs/style.png\n',
      ),
    ).toEqual(["7: rules[0].request.source: reference 'style' is an image, but source takes a video"]);
  });
});

describe('rule globs', () => {
  it('match the relative path with brace sets, ignoring case; the first matching rule wins', async () => {
    const recipe = await load(`rules:
  - match: "raw/**"
    request: { type: image, prompt: x }
  - match: "**/*.{jpg,jpeg,png,webp}"
    request: { type: image, prompt: x }
  - match: "*.txt"
    request: { type: image, prompt: x }
`);
    const at = (p: string) => findRule(recipe, p)?.index ?? null;
    expect(at('raw/a.jpg')).toBe(0);
    expect(at('a.jpg')).toBe(1);
    expect(at('trip/day 1/IMG_0001.JPG')).toBe(1);
    expect(at('x.WebP')).toBe(1);
    expect(at('a.gif')).toBeNull();
    expect(at('notes.txt')).toBe(2);
    // `*` stays within a folder: a glob without ** matches only at the top.
    expect(at('sub/notes.txt')).toBeNull();
  });
});

describe('mergeRequest (sidecar over rule)', () => {
  it('merges objects deeply, replaces arrays, and removes fields set to null; inputs unchanged', () => {
    const base = {
      prompt: 'a',
      video: { resolution: '720p', hdr: true },
      image_ref: [{ url: 'u1' }, { url: 'u2' }],
    };
    const patch = { video: { hdr: null, loop: true }, image_ref: [{ url: 'u3' }], style: 'manga' };
    expect(mergeRequest(base, patch)).toEqual({
      prompt: 'a',
      video: { resolution: '720p', loop: true },
      image_ref: [{ url: 'u3' }],
      style: 'manga',
    });
    expect(base.video.hdr).toBe(true);
  });
});
