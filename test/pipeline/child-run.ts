/**
 * The set-up shared by the tests that run real `genpipe` children against an emulator started in the
 * test file: the emulator (with a proxy in front when asked), a scratch folder, input folders with a
 * recipe, the `run` command line, and a run killed while a create's answer is held back.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { activeClients, startTestEmulator } from '../helpers/emulator.ts';
import { killChildren, type SlowProxy, spawnGenpipe, startSlowProxy } from './resume-helpers.ts';
import { put } from './stage-helpers.ts';

/** PNGs are image_edit sources, text files image prompts. */
export const EDIT_OR_PROMPT_RECIPE = `rules:
  - match: "*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1 }
`;

/** What a test file's children run against. */
export interface ChildRunBed {
  emu: RunningEmulator;
  /** In front of the emulator when `proxy` was asked for. */
  proxy: SlowProxy;
  /** A scratch folder, removed after the file's tests. */
  root: string;
}

export interface ChildRunBedOptions<C extends string> {
  /** Names the scratch folder (`genpipe-<name>-…`). */
  name: string;
  /** The emulator's clients, each active with limits no test reaches, with the key `keyOf(id)`. */
  clients: readonly C[];
  keyOf: (client: C) => string;
  /** More emulator config (queue_ms, processing_ms, faults…). */
  config?: Record<string, unknown>;
  /** Starts a SlowProxy in front of the emulator. */
  proxy?: boolean;
}

/**
 * Starts the bed before the file's tests and hands it to `ready`; after them, kills the children still
 * running and closes and removes everything.
 *
 * @example useChildRunBed({ name: 'retry', clients: [CLIENT], keyOf: () => KEY }, (b) => ({ emu, root } = b));
 */
export function useChildRunBed<C extends string>(
  options: ChildRunBedOptions<C>,
  ready: (bed: ChildRunBed) => void,
): void {
  let emu: RunningEmulator | undefined;
  let proxy: SlowProxy | undefined;
  let root: string | undefined;
  beforeAll(async () => {
    emu = await startTestEmulator({ ...activeClients(options.clients, options.keyOf), ...options.config });
    if (options.proxy) proxy = await startSlowProxy(emu.url);
    root = await mkdtemp(join(tmpdir(), `genpipe-${options.name}-`));
    ready({ emu, proxy: proxy as SlowProxy, root });
  });
  afterAll(async () => {
    killChildren();
    await proxy?.close();
    await emu?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });
}

/** `genpipe run <input> --out <out> --json --poll-interval 1`, then `extra`. */
export function runArgs(input: string, out: string, extra: readonly string[] = []): string[] {
  return ['run', input, '--out', out, '--json', '--poll-interval', '1', ...extra];
}

/** `<root>/<name>` with `genpipe.yaml` (`recipe`) and `files`; returns it and `<root>/<name>-out`. */
export async function recipeFolder(
  root: string,
  name: string,
  recipe: string,
  files: Record<string, string | Buffer>,
): Promise<{ input: string; out: string }> {
  const input = join(root, name);
  await put(input, 'genpipe.yaml', recipe);
  for (const [rel, content] of Object.entries(files)) await put(input, rel, content);
  return { input, out: join(root, `${name}-out`) };
}

/**
 * Runs `args` (one job at a time is up to the caller) through `proxy` holding back create answers, and
 * SIGKILLs the run once a create has reached the service and its answer is held: the run never learns
 * that generation's id. Returns the held create's request id.
 */
export async function killWhileCreateHeld(
  proxy: SlowProxy,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<string> {
  proxy.holdCreates = true;
  try {
    const first = spawnGenpipe(args, env);
    await first.until(
      () => proxy.flows.some((f) => f.kind === 'create' && f.held),
      'a create whose answer is held back',
    );
    first.proc.kill('SIGKILL');
    await first.exited;
    return proxy.flows.find((f) => f.kind === 'create' && f.held)!.requestId!;
  } finally {
    proxy.holdCreates = false;
  }
}
