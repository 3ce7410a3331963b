/**
 * Flags with absurd values are refused before anything is sent (exit 2, the flag and its range named,
 * the pointer to the command's help), and a whole number in exponent form is a whole number.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.ts';

let root: string;
let input: string;
const env = {
  ...process.env,
  GENPIPE_API_KEY: 'svc-api-flag-ranges',
  GENPIPE_BASE_URL: 'http://127.0.0.1:9',
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-flag-ranges-'));
  input = join(root, 'in');
  await mkdir(input);
  await writeFile(join(input, 'a.txt'), 'a prompt');
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

const HELP = "Run 'genpipe run --help' for usage.";

describe('absurd flag values', () => {
  const cases: Array<[string[], RegExp]> = [
    [['--rate-window', '2200000'], /--rate-window <seconds>.*'2200000' is invalid.*at most 86400/],
    [['--rate-window', '1e12'], /--rate-window <seconds>.*'1e12' is invalid.*at most 86400/],
    [['--poll-interval', '1e9'], /--poll-interval <seconds>.*'1e9' is invalid.*at most 3600/],
  ];
  for (const [flag, message] of cases) {
    it(`run ${flag.join(' ')}: refused, exit 2`, async () => {
      const r = await runCli(['run', input, '--out', join(root, 'out'), ...flag], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toContain(HELP);
    });
  }

  it('run --poll-interval 0.5 against the service: the message and the pointer to help', async () => {
    const r = await runCli(['run', input, '--out', join(root, 'out'), '--poll-interval', '0.5'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `genpipe: --poll-interval must be at least 1 second against the service (the interface accepts 1 to 5 s)\n${HELP}\n`,
    );
  });

  it('worker --poll-interval 0.5 against the service: refused as run refuses it, before the store is opened', async () => {
    // A store nobody listens on: the refusal comes before any connection.
    const store = 'postgres://genpipe:flag-ranges@127.0.0.1:9/db';
    const r = await runCli(['worker', '--store', store, '--poll-interval', '0.5'], env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      "genpipe: --poll-interval must be at least 1 second against the service (the interface accepts 1 to 5 s)\nRun 'genpipe worker --help' for usage.\n",
    );
  });

  it('generate --poll-interval 0.5: the same rule, the same words, nothing sent', async () => {
    const r = await runCli(['generate', '--prompt', 'a fox', '--wait', '--poll-interval', '0.5'], env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      "genpipe: --poll-interval must be at least 1 second against the service (the interface accepts 1 to 5 s)\nRun 'genpipe generate --help' for usage.\n",
    );
  });

  it('run --files-at-once without a store: refused, a worker flag with no worker here', async () => {
    const r = await runCli(['run', input, '--out', join(root, 'out'), '--files-at-once', '2'], env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /^genpipe: --files-at-once sets the files a worker holds: it needs distributed mode/,
    );
    expect(r.stderr).toContain(HELP);
  });

  it('--max-reads 1e6 is a whole number', async () => {
    const r = await runCli(
      ['run', input, '--out', join(root, 'out'), '--max-reads', '1e6', '--dry-run'],
      env,
    );
    expect(r.stderr).not.toMatch(/--max-reads/);
    const bad = await runCli(['run', input, '--out', join(root, 'out'), '--max-reads', '1.5'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-reads <n>.*'1\.5' is invalid. expected a whole number of at least 1/);
  });
});
