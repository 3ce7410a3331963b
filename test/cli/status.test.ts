import { chmodSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { UNPRIVILEGED } from '../helpers/other-user.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
const folder = () =>
  promptFolder({ 'a.txt': 'a small a fox', 'b.txt': 'a small b fox', 'c.txt': 'a small c fox' });

describe('genpipe status <out-dir>', () => {
  it('says what the journal holds and what a re-run would do, without running anything', async () => {
    const { input, out } = folder();
    const run = await runCli(['run', input, '--out', out, '--emulator', '-q'], process.env, 60_000);
    expect(run.code).toBe(0);
    const status = await runCli(['status', out], process.env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/last batch: #1 of 1, finished/);
    expect(status.stdout).toContain('inputs in the journal: 3');
    expect(status.stdout).toMatch(/^ +3 done$/m);
    expect(status.stdout).toContain('done (3): skips them (already done)');
    const json = await runCli(['status', out, '--json'], process.env);
    const summary = JSON.parse(json.stdout) as { inputs: number; by_kind: Record<string, number> };
    expect(summary.inputs).toBe(3);
    expect(summary.by_kind.done).toBe(3);
  }, 90_000);

  it('refuses an out dir without a journal, with exit 2 and how to point at one', async () => {
    const { out } = folder();
    const status = await runCli(['status', out], process.env);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('no journal at');
    expect(status.stderr).toContain('--journal <path>');
  });

  it('reads a journal it cannot write, and changes nothing in its folder, not even an older schema', async () => {
    const { input, out } = folder();
    const run = await runCli(['run', input, '--out', out, '--emulator', '-q'], process.env, 60_000);
    expect(run.code).toBe(0);
    const journalDir = join(out, '.genpipe');
    // an older genpipe's journal (schema 3, without job_durations)
    const old = new Database(join(journalDir, 'journal.db'));
    old.exec('DROP TABLE job_durations');
    old.pragma('user_version = 3');
    old.close();
    const folderState = () => ({
      names: readdirSync(journalDir).sort(),
      mtimeMs: statSync(journalDir).mtimeMs,
    });
    const was = folderState();
    chmodSync(dirname(out), 0o755);
    for (const as of UNPRIVILEGED ? [UNPRIVILEGED, {}] : [{}]) {
      const status = await runCli(['status', out], process.env, 30_000, undefined, as);
      expect(status.stderr).toBe('');
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(/^ +3 done$/m);
      if (as === UNPRIVILEGED) continue; // a dry run checks the out dir can be written, as a run does
      const dry = await runCli(
        ['run', input, '--out', out, '--emulator', '--dry-run'],
        process.env,
        30_000,
        undefined,
        as,
      );
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('already done in an earlier run');
      expect(folderState()).toEqual(was);
    }
    // the schema version in the file's header (user_version, bytes 60-63)
    expect(readFileSync(join(journalDir, 'journal.db')).readUInt32BE(60)).toBe(3);
    expect(folderState()).toEqual(was);
  }, 90_000);

  it('says a journal it cannot read cannot be read, and never to remove it', async () => {
    if (!UNPRIVILEGED) return;
    const { input, out } = folder();
    const run = await runCli(['run', input, '--out', out, '--emulator', '-q'], process.env, 60_000);
    expect(run.code).toBe(0);
    chmodSync(dirname(out), 0o755);
    chmodSync(join(out, '.genpipe', 'journal.db'), 0o600);
    const status = await runCli(['status', out], process.env, 30_000, undefined, UNPRIVILEGED);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('cannot be read');
    expect(status.stderr).not.toMatch(/remove it/);
    const again = await runCli(
      ['run', input, '--out', out, '--emulator', '-q'],
      process.env,
      30_000,
      undefined,
      UNPRIVILEGED,
    );
    expect(again.code).toBe(2);
    expect(again.stderr).not.toMatch(/remove it/);
  }, 90_000);

  it('says a --journal file that does not exist does not exist', async () => {
    const { out } = folder();
    const status = await runCli(['status', out, '--journal', join(out, 'nonexist.db')], process.env);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('does not exist');
    expect(status.stderr).not.toContain('nothing ran with');
  });
});
