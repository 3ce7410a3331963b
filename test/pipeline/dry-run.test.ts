/**
 * The dry run's own logic, in process and without a service: how each file's media would travel (the
 * rule's `upload`, the client's inline threshold, base64 for a small image), the request with its
 * placeholders shown, the totals and their cost from a price list, the price list's validation, and the
 * journal's preview, which decides as admit does and writes nothing.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DryRunEntry,
  DryRunTotals,
  dryRun,
  dryRunSummaryLines,
  PriceListError,
  parsePriceList,
} from '../../src/pipeline/dry-run/index.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import { plan } from '../../src/pipeline/stages/plan.ts';
import { sniff } from '../../src/pipeline/stages/sniff.ts';
import { openJournal } from '../../src/pipeline/store/sqlite/index.ts';
import { writePng } from '../client/client-helpers.ts';
import { contextFor, itemFor, put } from './stage-helpers.ts';

const RECIPE = `rules:
  - match: "small/*.png"
    input_as: source
    upload: base64
    request: { type: image_edit, model: uni-1, prompt: "ink", image_ref: [{ ref: style }] }
  - match: "forced/*.png"
    input_as: source
    upload: presigned
    request: { type: image_edit, model: uni-1, prompt: "ink" }
  - match: "auto/*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "ink" }
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1 }
references:
  style: style.png
`;

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-dry-run-unit-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('dryRun', () => {
  it('shows how each file would travel, as the upload stage and the client would send it', async () => {
    const input = join(root, 'media');
    await put(input, 'genpipe.yaml', RECIPE);
    await writePng(join(input, 'style.png'), 8, 8);
    for (const dir of ['small', 'forced', 'auto']) {
      await mkdir(join(input, dir), { recursive: true });
      await writePng(join(input, dir, 'a.png'), 64, 48);
    }
    await writePng(join(input, 'auto', 'tiny.png'), 2, 2);
    await put(input, 'p.txt', 'a fox');
    const recipe = await loadRecipe({ inputDir: input });
    const entries: DryRunEntry[] = [];
    const { totals, ignored } = await dryRun({
      inputDir: input,
      outDir: join(root, 'media-out'),
      recipe,
      onEntry: (e) => entries.push(e),
      // auto/a.png is above this inline threshold, auto/tiny.png below it
      inlineMaxBytes: 100,
    });
    const by = new Map(entries.map((e) => [e.input, e]));
    expect(entries.map((e) => e.input)).toEqual([
      'auto/a.png',
      'auto/tiny.png',
      'forced/a.png',
      'p.txt',
      'small/a.png',
    ]);
    expect(by.get('auto/a.png')).toMatchObject({
      media: 'presigned',
      request: { source: { file_id: '<the file, uploaded presigned>' } },
    });
    expect(by.get('auto/tiny.png')).toMatchObject({ media: 'inline' });
    expect(by.get('forced/a.png')).toMatchObject({ media: 'presigned' });
    expect(by.get('p.txt')).toMatchObject({ media: 'prompt', request: { type: 'image', prompt: 'a fox' } });
    const small = by.get('small/a.png')!;
    expect(small).toMatchObject({
      media: 'base64',
      references: ['style'],
      request: {
        source: { data: `<the file as base64, ${small.bytes} bytes>`, media_type: 'image/png' },
        image_ref: [{ file_id: '<reference style, uploaded once per batch>' }],
      },
    });
    expect(totals.summary(null, null).generations).toEqual({ image: 1, image_edit: 4 });
    expect(ignored?.by_reason).toMatchObject({ 'recipe file': 1 });
  });
});

describe('price lists', () => {
  it('reads YAML and JSON, and names every problem with its line', () => {
    expect(parsePriceList('image: 1\nvideo: 10.5\n', 'p.yaml')).toEqual({ image: 1, video: 10.5 });
    expect(parsePriceList('{"image_edit": 0}', 'p.json')).toEqual({ image_edit: 0 });
    const problems = (text: string) => {
      try {
        parsePriceList(text, 'p.yaml');
      } catch (err) {
        expect(err).toBeInstanceOf(PriceListError);
        return (err as PriceListError).lines;
      }
      throw new Error('no error');
    };
    expect(problems('- image\n- 1\n')).toEqual([
      'p.yaml: must be { <generation type>: <credits per generation>, … } (types: image, image_edit, video, video_edit, video_reframe)',
    ]);
    expect(problems('image: one\n')).toEqual([
      'p.yaml:1: image: Expected a number of credits of at least 0 but received "one"',
    ]);
    expect(problems('image: 1\nimage: 2\n')[0]).toMatch(/^p\.yaml:2: /);
    expect(problems('{}')).toEqual([expect.stringMatching(/^p\.yaml: names no price: it must be \{/)]);
  });

  it('prices the generations it names; the others are counted as without a price', () => {
    const totals = new DryRunTotals();
    const sent = (type: 'image' | 'video'): DryRunEntry => ({
      input: `${type}.x`,
      outcome: 'send',
      stage: null,
      reason: null,
      generation_type: type,
      model: 'm',
      media: 'inline',
      bytes: 1,
      request: {},
      references: [],
    });
    for (const e of [sent('image'), sent('image'), sent('video')]) totals.add(e);
    totals.add({ ...sent('image'), outcome: 'fail', stage: 'check', reason: 'too big' });
    const summary = totals.summary({ image: 0.1 }, 'the price list p.yaml');
    expect(summary.cost).toEqual({ credits: 0.2, source: 'the price list p.yaml', unpriced: { video: 1 } });
    expect(dryRunSummaryLines(summary, { image: 0.1 }, null, '')).toEqual([
      'dry run: 4 files: 3 would be sent, 1 would fail, 0 skipped',
      'generations: 2 image, 1 video (3 in all)',
      'estimated cost: at least 0.2 credits (2 image × 0.1), from the price list p.yaml; no price there for 1 video',
    ]);
    expect(totals.anyFailed).toBe(true);
    const unknown = totals.summary(null, null);
    expect(unknown.cost.credits).toBeNull();
    expect(dryRunSummaryLines(unknown, null, null, 'no prices')[2]).toBe(
      'estimated cost: unknown (no prices); give --price-list <file> with the credits of each generation type, as { image: 1, video: 10 }',
    );
  });
});

describe('Journal.preview', () => {
  it('decides as admit would, and writes nothing', async () => {
    const input = join(root, 'preview');
    const ctx = await contextFor(
      input,
      'rules:\n  - match: "*.txt"\n    request: { type: image, model: uni-1 }\n',
    );
    await put(input, 'a.txt', 'a fox');
    const planned = await plan(await sniff(await itemFor(input, 'a.txt'), ctx), ctx);
    const journal = openJournal({ outDir: join(root, 'preview-out'), lock: false, mountInfo: null });
    try {
      const d = await journal.preview(planned, ctx.recipe, { service: 'http://svc' });
      expect(d).toMatchObject({ action: 'fresh', reason: null, item: { state: 'planned', place: 'a.txt' } });
      expect(journal.rows()).toEqual([]);
      expect(journal.history('a.txt')).toEqual([]);
      // admit, for comparison, records the file.
      await journal.startBatch({ inputDir: input, service: 'http://svc' });
      expect((await journal.admit(planned, ctx.recipe)).action).toBe('fresh');
      expect(journal.rows()).toHaveLength(1);
    } finally {
      await journal.close();
    }
  });
});
