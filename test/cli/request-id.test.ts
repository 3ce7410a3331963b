/**
 * `--request-id` of `generate` and `legacy modify`: the X-Request-Id the service echoes — 1 to 200 visible
 * ASCII characters. A value that cannot be one (empty, a line break, a space, too long) is a usage error
 * naming the flag and the form, exit 2, nothing sent (not replaced by a fresh id, not refused by the
 * HTTP layer); a value that can is sent and echoed as given.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => {
  await emu?.close();
});

/** The emulator's responses by status so far. */
async function responses(): Promise<Record<string, number>> {
  return (await (await fetch(`${emu.url}/_emulator/stats`)).json()).responses;
}

const FORM = '1 to 200 visible ASCII characters (no space, line break or other control character)';

const COMMANDS: Array<[string, string[]]> = [
  ['genpipe generate', ['generate', '--type', 'image', '--model', 'uni-1', '--prompt', 'a small fox']],
  [
    'genpipe legacy modify',
    ['legacy', 'modify', '--media-url', 'http://127.0.0.1:9/v.mp4', '--model', 'ray-2', '--mode', 'flex_1'],
  ],
];

const BAD: Array<[string, string, string]> = [
  ['empty', '', "''"],
  ['with CR/LF', 'abc\r\ndef', "'abc\\x0d\\x0adef'"],
  ['with a space', 'abc def', "'abc def'"],
  ['over 200 characters', 'x'.repeat(201), `'${'x'.repeat(201)}'`],
];

describe('a --request-id that cannot be one', () => {
  for (const [command, args] of COMMANDS) {
    for (const [what, value, shown] of BAD) {
      it(`${command}, ${what}: a usage error naming the flag and the form, exit 2, nothing sent`, async () => {
        const before = await responses();
        const r = await runCli([...args, '--request-id', value], cliEnv(emu));
        expect(r.code, r.stderr).toBe(2);
        expect(r.stdout).toBe('');
        expect(r.stderr).toBe(
          `genpipe: --request-id ${shown} is not a request id: ${FORM}\n` +
            `Run '${command} --help' for usage.\n`,
        );
        // The only response between the two reads is the first read's own.
        expect(await responses()).toEqual({ ...before, 200: (before['200'] ?? 0) + 1 });
      }, 60_000);
    }
  }

  it('with --json: one JSON line, exit 2', async () => {
    const r = await runCli([...COMMANDS[0]![1], '--request-id', 'a\nb', '--json'], cliEnv(emu));
    expect(r.code).toBe(2);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const { error } = JSON.parse(lines[0]!);
    expect(error).toMatchObject({ name: 'UsageError', code: 'GENPIPE_USAGE' });
    expect(error.message).toContain('--request-id');
  }, 60_000);
});

describe('a --request-id that can be one', () => {
  it('is sent and echoed as given', async () => {
    const id = 'my-batch/42:retry#1';
    const r = await runCli([...COMMANDS[0]![1], '--request-id', id, '--json'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(jsonOut(r).request_id).toBe(id);
    const gens = (await (await fetch(`${emu.url}/_emulator/generations`)).json()).data;
    expect(JSON.stringify(gens)).toContain(id);
  }, 60_000);
});
