/**
 * `--dashboard` as `genpipe run` takes it: where it listens is said on stderr (the token too, never in
 * the log file), and what cannot be served is a usage error (exit 2) before anything is sent: a value
 * that is not [host:]port, a dry run, a port in use.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { adminRows, startTestEmulator } from '../helpers/emulator.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu?.close();
});

it('serves a run on loopback and keeps the token out of the log file', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  const log = join(out, '..', 'run.log');
  const r = await runCli(['run', input, '--out', out, '--dashboard', '0', '--log-file', log], cliEnv(emu));
  expect(r.code, r.stderr).toBe(0);
  const [, token] =
    /genpipe: dashboard on http:\/\/127\.0\.0\.1:\d+\/ \(actions need the token (\S+)\)/.exec(r.stderr) ?? [];
  expect(token).toBeDefined();
  const logged = readFileSync(log, 'utf8');
  expect(logged).toMatch(/dashboard on http:\/\/127\.0\.0\.1:\d+\//);
  expect(logged).not.toContain(token);
});

it('refuses what it cannot serve before anything is sent', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  const before = (await adminRows(emu)).length;
  const bad = await runCli(['run', input, '--out', out, '--dashboard', 'localhost:http'], cliEnv(emu));
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('expected [host:]port');
  const dry = await runCli(['run', input, '--out', out, '--dashboard', '0', '--dry-run'], cliEnv(emu));
  expect(dry.code).toBe(2);
  expect(dry.stderr).toContain('--dashboard shows a running batch: a dry run has none');

  const taken = createServer();
  await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
  const port = (taken.address() as { port: number }).port;
  try {
    const busy = await runCli(['run', input, '--out', out, '--dashboard', String(port)], cliEnv(emu));
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain(`--dashboard cannot listen on 127.0.0.1:${port}: the port is in use`);
  } finally {
    taken.close();
  }
  expect((await adminRows(emu)).length).toBe(before);
});
