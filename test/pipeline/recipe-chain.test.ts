/**
 * Chain rules in the recipe: `steps` with `{ from: <step> }`, checked up front — every refusal as
 * `<file>:<line>: <field>: <message>`, before anything is uploaded or paid.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRecipeError, loadRecipe, type RecipeError } from '../../src/pipeline/recipe.ts';
import { HDR_EXTEND_DETAIL, LOOP_REVERSE_EXTEND_DETAIL } from '../../src/spec/details.ts';
import { makeImage, tempDir } from '../media/fixtures.ts';
import { put } from './stage-helpers.ts';

let dir: string;
let remove: () => Promise<void>;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-recipe-chain-'));
  await put(dir, 'refs/.keep', '');
  await makeImage(join(dir, 'refs', 'style.png'), { width: 16, height: 12 });
});
afterAll(() => remove());

async function load(text: string) {
  await put(dir, 'recipe.yaml', text);
  return loadRecipe({ inputDir: dir, recipePath: join(dir, 'recipe.yaml') });
}

async function problemsOf(text: string): Promise<string[]> {
  const err = await load(text).then(
    () => null,
    (e: unknown) => e,
  );
  expect(isRecipeError(err)).toBe(true);
  expect((err as RecipeError).message).toMatch(/recipe\.yaml:\d+: rules\[0\]/);
  return (err as RecipeError).problems.map((p) => `${p.line}: ${p.path}: ${p.message}`);
}

/** A chain rule over photos with `steps` (YAML, indented under the rule). */
const chain = (steps: string) => `rules:
  - match: "*.png"
    input_as: source
    steps:
${steps}
references:
  style: refs/style.png
`;

const STYLIZE = `      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor", image_ref: [{ ref: style }] }
`;
const ANIMATE = `      - name: animate
        request: { type: video, model: ray-3.2, prompt: "slow pan", video: { start_frame: { from: stylize } } }
`;

describe('chain rules', () => {
  it('reads a photo → stylized → animated → reframed twice: parents first, channels chosen', async () => {
    const recipe = await load(
      chain(`${STYLIZE}      - name: portrait
        request: { type: video_reframe, model: ray-3.2, prompt: "keep it", aspect_ratio: "9:16", source: { from: animate } }
${ANIMATE}      - name: square
        download: true
        request: { type: video_reframe, model: ray-3.2, prompt: "keep it", aspect_ratio: "1:1", source: { from: animate } }
`),
    );
    const rule = recipe.rules[0]!;
    // Written before its parent, portrait still runs after it; the file goes into the first step written.
    expect(rule.steps!.map((s) => [s.name, s.after, s.download])).toEqual([
      ['stylize', [], false],
      ['animate', ['stylize'], false],
      ['portrait', ['animate'], true],
      ['square', ['animate'], true],
    ]);
  });

  it('chains by generation_id where the service does, by url where it does not', async () => {
    const recipe = await load(
      chain(`${STYLIZE}${ANIMATE}      - name: restyle
        request: { type: image_edit, model: uni-1, prompt: "ink", source: { from: stylize } }
      - name: extend
        request: { type: video, model: ray-3.2, prompt: "more", video: { start_frame: { from: animate } } }
      - name: reframe
        request: { type: video_reframe, model: ray-3.2, prompt: "keep", aspect_ratio: "1:1", source: { from: animate } }
      - name: mixed
        request: { type: image, model: uni-1, prompt: "a mix", image_ref: [{ from: stylize }] }
`),
    );
    const byName = Object.fromEntries(recipe.rules[0]!.steps!.map((s) => [s.name, s.request]));
    expect((byName.animate as { video: unknown }).video).toEqual({ start_frame: { url: '$step:stylize' } });
    expect(byName.restyle!.source).toEqual({ generation_id: '$step:stylize' });
    expect((byName.extend as { video: unknown }).video).toEqual({
      start_frame: { generation_id: '$step:animate' },
    });
    expect(byName.reframe!.source).toEqual({ generation_id: '$step:animate' });
    expect(byName.mixed!.image_ref).toEqual([{ url: '$step:stylize' }]);
  });

  it('refuses kinds that cannot chain, in the service words, at the from field', async () => {
    const problems = await problemsOf(
      chain(`${STYLIZE}${ANIMATE}      - name: edit-photo
        request: { type: video_edit, model: ray-3.2, prompt: "x", source: { from: stylize } }
      - name: edit-clip
        request: { type: image_edit, model: uni-1, prompt: "x", source: { from: animate } }
      - name: ref-clip
        request: { type: image, model: uni-1, prompt: "x", image_ref: [{ from: animate }] }
`),
    );
    expect(problems).toEqual([
      "10: rules[0].steps[2].request.source.from: source: step 'stylize' is of type 'image_edit', but this position needs a video output",
      "12: rules[0].steps[3].request.source.from: source: step 'animate' is of type 'video', but this position needs an image output",
      "14: rules[0].steps[4].request.image_ref[0].from: image_ref[0]: step 'animate' is of type 'video', but this position needs an image output",
    ]);
  });

  it('refuses unknown steps, a step using itself, duplicates, cycles', async () => {
    expect(
      await problemsOf(
        chain(`${STYLIZE}      - name: a
        request: { type: image_edit, model: uni-1, prompt: "x", source: { from: nope } }
      - name: b
        request: { type: image_edit, model: uni-1, prompt: "x", source: { from: b } }
      - name: a
        request: { type: image, model: uni-1, prompt: "x" }
`),
      ),
    ).toEqual([
      "8: rules[0].steps[1].request.source.from: no step named 'nope' (steps: stylize, a, b, a)",
      '10: rules[0].steps[2].request.source.from: a step cannot use its own output',
      "11: rules[0].steps[3].name: step name 'a' is used twice (also steps[1])",
    ]);
    expect(
      await problemsOf(
        chain(`      - name: a
        request: { type: image_edit, model: uni-1, prompt: "x", image_ref: [{ from: b }] }
      - name: b
        request: { type: image_edit, model: uni-1, prompt: "x", source: { from: a } }
`),
      ),
    ).toEqual([
      '6: rules[0].steps[0].request.image_ref[0].from: the steps form a cycle (a takes from b takes from a): a step cannot use a step that uses it',
    ]);
  });

  it('runs the service rules on every step: extend with HDR, loop on a reverse extend, two generation refs', async () => {
    const problems = await problemsOf(
      chain(`${STYLIZE}${ANIMATE}      - name: hdr
        request: { type: video, model: ray-3.2, prompt: "x", video: { hdr: true, resolution: 1080p, start_frame: { from: animate } } }
      - name: loop
        request: { type: video, model: ray-3.2, prompt: "x", video: { loop: true, end_frame: { from: animate } } }
      - name: both
        request: { type: video, model: ray-3.2, prompt: "x", video: { start_frame: { from: animate }, end_frame: { from: animate } } }
`),
    );
    expect(problems).toHaveLength(3);
    expect(problems[0]).toBe(`10: rules[0].steps[2].request.video.hdr: ${HDR_EXTEND_DETAIL}`);
    expect(problems[1]).toBe(`12: rules[0].steps[3].request.video.loop: ${LOOP_REVERSE_EXTEND_DETAIL}`);
    expect(problems[2]).toMatch(
      /^14: rules\[0\]\.steps\[4\]\.request.*generation-ref keyframes are only supported for video extend/,
    );
  });

  it('refuses a step request the service would refuse, and a rule with both request and steps', async () => {
    expect(
      await problemsOf(
        chain(`${STYLIZE}      - name: wide
        request: { type: video_reframe, model: ray-3.2, prompt: "x", source: { from: stylize } }
`),
      ),
    ).toEqual([
      "8: rules[0].steps[1].request.source.from: source: step 'stylize' is of type 'image_edit', but this position needs a video output",
      // The step's other problems too, at once.
      "8: rules[0].steps[1].request.aspect_ratio: aspect_ratio (the target shape) is required for type 'video_reframe'",
    ]);
    expect(
      await problemsOf(`rules:
  - match: "*.png"
    request: { type: image, model: uni-1, prompt: "x" }
    steps:
      - name: a
        request: { type: image, model: uni-1, prompt: "x" }
`),
    ).toEqual([
      "3: rules[0].request: a rule has either 'request' (one generation) or 'steps' (a chain), not both",
    ]);
    expect(
      await problemsOf(
        chain(`${STYLIZE}      - name: reframe
        request: { type: video_reframe, model: ray-3.2, prompt: "x", source: { from: animate } }
${ANIMATE}`),
      ),
    ).toEqual([
      "8: rules[0].steps[1].request.aspect_ratio: aspect_ratio (the target shape) is required for type 'video_reframe'",
    ]);
  });
});
