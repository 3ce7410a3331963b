/**
 * Helpers for the local pipeline stages' tests: a temp input dir with a recipe, items for its files,
 * and the sniff → plan → check chain.
 */
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type Item, newItem } from '../../src/pipeline/item.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import type { StageContext } from '../../src/pipeline/stage.ts';
import { check } from '../../src/pipeline/stages/check.ts';
import { plan } from '../../src/pipeline/stages/plan.ts';
import { sniff } from '../../src/pipeline/stages/sniff.ts';

/** Writes `content` at `rel` under `dir`, creating folders. */
export async function put(dir: string, rel: string, content: string | Buffer): Promise<string> {
  const path = join(dir, rel);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content);
  return path;
}

/** Writes `genpipe.yaml` into `inputDir` and returns a stage context for it. */
export async function contextFor(inputDir: string, recipeYaml: string): Promise<StageContext> {
  await put(inputDir, 'genpipe.yaml', recipeYaml);
  const recipe = await loadRecipe({ inputDir });
  return { inputDir, outDir: join(inputDir, '..', 'out'), recipe, signal: new AbortController().signal };
}

/** A discovered item for the file at `rel` under `inputDir`. */
export async function itemFor(inputDir: string, rel: string): Promise<Item> {
  const abs = join(inputDir, rel);
  const st = await stat(abs);
  return newItem(rel, abs, st.size, st.mtimeMs);
}

/** Runs sniff, plan and check on the file at `rel`, stopping at the first skip or failure. */
export async function runLocalStages(ctx: StageContext, rel: string): Promise<Item> {
  let item = await itemFor(ctx.inputDir, rel);
  for (const stage of [sniff, plan, check]) {
    item = await stage(item, ctx);
    if (item.state === 'failed' || item.state === 'skipped') break;
  }
  return item;
}
