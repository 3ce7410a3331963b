/**
 * A shared reference whose journal record cannot be read or written (the store went away) is the
 * journal's failure, not the upload's: the batch stops as on any failed journal write and the files
 * using the reference are left for the next run — not failed (a newcomer saw four files failed in a
 * PostgreSQL outage, retried only by hand).
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import { startBatch } from '../../src/pipeline/runner.ts';
import { KEY, startTestEmulator } from '../helpers/emulator.ts';

let emu: RunningEmulator;
let root: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  root = mkdtempSync(join(tmpdir(), 'genpipe-ref-journal-'));
});
afterAll(async () => {
  await emu?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('a shared reference the journal cannot record', () => {
  it('stops the batch and leaves the files using it, failing none', async () => {
    const inputDir = join(root, 'in');
    mkdirSync(join(inputDir, 'refs'), { recursive: true });
    const samples = join(import.meta.dirname, '..', '..', 'samples');
    copyFileSync(join(samples, 'refs', 'style.png'), join(inputDir, 'refs', 'style.png'));
    writeFileSync(join(inputDir, 'a.txt'), 'a fox in the style');
    writeFileSync(
      join(inputDir, 'genpipe.yaml'),
      'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, image_ref: [{ ref: style }] }\nreferences:\n  style: refs/style.png\n',
    );
    const client = createClient({ apiKey: KEY, baseUrl: emu.url });
    const gone = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
      name: 'StoreConnectionError',
    });
    try {
      const result = await startBatch({
        inputDir,
        outDir: join(root, 'out'),
        recipe: await loadRecipe({ inputDir }),
        client,
        referenceMemory: {
          fileId: async () => {
            throw gone;
          },
          uploaded: async () => undefined,
        },
      }).done;
      expect(result.stop?.cause).toBe('journal');
      expect(result.report.totals).toMatchObject({ inputs: 1, failed: 0, unprocessed: 1 });
    } finally {
      await client.close();
    }
  });
});
