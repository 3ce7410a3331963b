/**
 * A user and password in a URL genpipe is given (--base-url, --legacy-base-url, GENPIPE_BASE_URL,
 * --store): the service authenticates with the API key, so a URL's user and password are never sent —
 * every request, the dry run's price request too, goes to the URL without them — and the password is
 * shown `[redacted]` wherever the URL is named, whether or not the URL parses (no scheme, a space in
 * the password, an unencoded `/`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { closedPort, startTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { type CliResult, cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;
let host: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  host = new URL(emu.url).host;
});
afterAll(async () => {
  await emu?.close();
});

const PASSWORD = 'Hunter2Secret';
const SPACED = 'Hunter2 Secret';
const GEN_ID = '6f1c0a52-1111-4222-8333-444455556666';

/** Nothing of the password, in any form, in anything the command printed. */
function expectNoPassword(r: CliResult, password: string): void {
  const printed = `${r.stdout}\n${r.stderr}`;
  for (const form of [password, encodeURIComponent(password), ...password.split(' ')]) {
    expect(printed).not.toContain(form);
  }
}

describe('a dry run with a password in the base URL', () => {
  it('is priced from the emulator as without one (the price request goes to the URL without its user and password)', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const url = `http://alice:${PASSWORD}@${host}`;
    const r = await runCli(['run', input, '--out', out, '--base-url', url, '--dry-run'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `estimated cost: 1 credit (1 image × 1), from the emulator's configured costs (http://${host}/_emulator/costs)`,
    );
    expect(r.stderr).not.toContain('unknown');
    expectNoPassword(r, PASSWORD);
  }, 60_000);

  it('with a space in the password: priced, and the password is never printed', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const url = `http://alice:${SPACED}@${host}`;
    const r = await runCli(['run', input, '--out', out, '--base-url', url, '--dry-run'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`from the emulator's configured costs (http://${host}/_emulator/costs)`);
    expectNoPassword(r, SPACED);
  }, 60_000);

  it('with a space in the password and no emulator there: the failure names the URL without its password', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const port = await closedPort();
    const url = `http://alice:${SPACED}@127.0.0.1:${port}`;
    const r = await runCli(['run', input, '--out', out, '--base-url', url, '--dry-run'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `could not ask http://127.0.0.1:${port}/_emulator/costs for prices: ECONNREFUSED`,
    );
    expectNoPassword(r, SPACED);
  }, 60_000);
});

describe('a real run with a password in the base URLs', () => {
  it('succeeds, with the legacy surface too, and prints no password', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const r = await runCli(
      [
        'run',
        input,
        '--out',
        out,
        '--base-url',
        `http://alice:${SPACED}@${host}`,
        '--legacy-base-url',
        `http://bob:${PASSWORD}@${host}/dream-machine/v1`,
      ],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    expectNoPassword(r, SPACED);
    expectNoPassword(r, PASSWORD);
  }, 60_000);
});

describe('a URL without a scheme that holds a password', () => {
  const cases: Array<[string, string[], Record<string, string>]> = [
    [
      'generations get --base-url',
      ['generations', 'get', GEN_ID, '--base-url', `alice:${PASSWORD}@HOST`],
      {},
    ],
    ['run --base-url', ['run', 'IN', '--out', 'OUT', '--base-url', `alice:${PASSWORD}@HOST`], {}],
    [
      'run --dry-run --base-url',
      ['run', 'IN', '--out', 'OUT', '--dry-run', '--base-url', `alice:${PASSWORD}@HOST`],
      {},
    ],
    [
      'generations get, GENPIPE_BASE_URL',
      ['generations', 'get', GEN_ID],
      { GENPIPE_BASE_URL: `alice:${PASSWORD}@HOST` },
    ],
    [
      'legacy get --legacy-base-url',
      ['legacy', 'get', GEN_ID, '--legacy-base-url', `bob:${PASSWORD}@HOST/dream-machine/v1`],
      {},
    ],
    [
      'legacy get, GENPIPE_LEGACY_BASE_URL',
      ['legacy', 'get', GEN_ID],
      { GENPIPE_LEGACY_BASE_URL: `bob:${PASSWORD}@HOST/dream-machine/v1` },
    ],
    [
      'run --legacy-base-url',
      ['run', 'IN', '--out', 'OUT', '--legacy-base-url', `bob:${PASSWORD}@HOST/dream-machine/v1`],
      {},
    ],
    ['run --store', ['run', 'IN', '--out', 'OUT', '--store', `u:${PASSWORD}@127.0.0.1:5432/db`], {}],
    ['status --store', ['status', 'OUT', '--store', `u:${PASSWORD}@127.0.0.1:5432/db`], {}],
  ];
  for (const [name, args, env] of cases) {
    it(`${name}: a usage error naming the URL with its password [redacted], nothing sent`, async () => {
      const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
      const argv = args.map((a) => a.replace('HOST', host).replace(/^IN$/, input).replace(/^OUT$/, out));
      const envWith = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace('HOST', host)]));
      const before = (await (await fetch(`${emu.url}/_emulator/stats`)).json()).responses;
      const r = await runCli(argv, cliEnv(emu, envWith));
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/(alice|bob|u):\[redacted\]@/);
      expectNoPassword(r, PASSWORD);
      const after = (await (await fetch(`${emu.url}/_emulator/stats`)).json()).responses;
      // The only response between the two reads is the first read's own.
      expect(after).toEqual({ ...before, 200: (before['200'] ?? 0) + 1 });
    }, 60_000);
  }
});

describe('a store URL with an unencoded / or a space in its password', () => {
  it('is named with the password [redacted]: refused when it does not parse, else where it cannot connect', async () => {
    const port = await closedPort();
    for (const [password, code] of [
      ['Hunter2/Secret', 2],
      [SPACED, 3],
    ] as const) {
      const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
      const r = await runCli(
        ['run', input, '--out', out, '--store', `postgres://u:${password}@127.0.0.1:${port}/db`],
        cliEnv(emu),
      );
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toContain(`postgres://u:[redacted]@127.0.0.1:${port}/db`);
      expectNoPassword(r, password);
    }
  }, 60_000);
});

describe('a URL whose password a raw # ? / or @ would split (or with a #fragment)', () => {
  // `#` starts the fragment: a URL reader takes `SECRETpart` for the host, where the text seems to say
  // 127.0.0.1 — refused before anything is looked up or sent, and no part of the password printed.
  const cases: Array<[string, string[], Record<string, string>]> = [
    ['status --store', ['status', 'OUT', '--store', 'postgres://bob:pa@SECRETpart#x@127.0.0.1:1/db'], {}],
    [
      'run --store',
      ['run', 'IN', '--out', 'OUT', '--store', 'postgres://bob:pa@SECRETpart#x@127.0.0.1:1/db'],
      {},
    ],
    ['run --base-url', ['run', 'IN', '--out', 'OUT', '--base-url', 'http://alice:pa@SECRETpart#x@HOST'], {}],
    [
      'GENPIPE_BASE_URL',
      ['generations', 'get', GEN_ID],
      { GENPIPE_BASE_URL: 'http://alice:pa@SECRETpart#x@HOST' },
    ],
    [
      '--legacy-base-url',
      ['legacy', 'get', GEN_ID, '--legacy-base-url', 'http://bob:pa@SECRETpart#x@HOST/dream-machine/v1'],
      {},
    ],
    [
      'a / in the password',
      ['run', 'IN', '--out', 'OUT', '--base-url', 'http://alice:pa@SECRETpart/x@HOST'],
      {},
    ],
    ['an extra @', ['run', 'IN', '--out', 'OUT', '--base-url', 'http://alice:pa@SECRETpart@HOST'], {}],
    ['a fragment', ['run', 'IN', '--out', 'OUT', '--base-url', 'http://alice:SECRETpart@HOST/#frag'], {}],
  ];
  for (const [name, args, env] of cases) {
    it(`${name}: refused (exit 2), saying to percent-encode, no part of the password shown, nothing looked up`, async () => {
      const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
      const argv = args.map((a) => a.replace('HOST', host).replace(/^IN$/, input).replace(/^OUT$/, out));
      const envWith = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace('HOST', host)]));
      const before = (await (await fetch(`${emu.url}/_emulator/stats`)).json()).responses;
      const r = await runCli(argv, cliEnv(emu, envWith));
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('percent-encode');
      expect(r.stderr).toContain('# as %23');
      expect(r.stderr).not.toContain('ENOTFOUND');
      expectNoPassword(r, 'SECRETpart');
      const after = (await (await fetch(`${emu.url}/_emulator/stats`)).json()).responses;
      expect(after).toEqual({ ...before, 200: (before['200'] ?? 0) + 1 });
    }, 60_000);
  }
});
