/**
 * `genpipe status` after an `--emulator` run: the embedded emulator dies with its run, so work that was
 * at it cannot be read again; status says what the re-run of the same command does with it, and the
 * re-run does just that. The run is killed while a hold (through the embedded emulator's own admin
 * endpoints, on loopback) keeps its generations queued, so they are at the emulator when it dies.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { heldGenerations, hold, until } from '../helpers/emulator.ts';
import { killChildren, lastStates, runToEnd, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { readJson } from '../pipeline/run-fixtures.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
afterAll(killChildren);

describe('genpipe status after an --emulator run', () => {
  it('says work at the gone embedded emulator is processed again, as the re-run does', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small a fox', 'b.txt': 'a small b fox' });
    const args = ['run', input, '--out', out, '--emulator', '--json'];
    const child = spawnGenpipe(args, process.env);
    // The banner names the embedded emulator before anything is sent: hold its generations there.
    const url = await until(async () => /embedded emulator at (http:\/\/[^\s,]+),/.exec(child.stderr())?.[1]);
    await hold({ url }, { state: 'queued' });
    await hold({ url }, { state: 'processing' });
    await heldGenerations({ url }, 2);
    await child.until((events) => {
      const states = lastStates(events);
      return states.get('a.txt') === 'submitted' && states.get('b.txt') === 'submitted';
    }, 'both files submitted');
    child.proc.kill('SIGKILL');
    await child.exited;

    const status = await runCli(['status', out], process.env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).not.toContain('at the service');
    expect(status.stdout).toMatch(/^ +2 at an embedded emulator$/m);
    expect(status.stdout).toContain(
      'at an embedded emulator (2): processes them again from the start (an embedded emulator ends with its batch, and its files and generations with it)',
    );
    const json = JSON.parse((await runCli(['status', out, '--json'], process.env)).stdout);
    expect(json.by_kind).toEqual({ at_embedded_emulator: 2 });

    const again = await runToEnd(args, process.env);
    expect(again.code, again.child.stderr()).toBe(0);
    const report = await readJson(join(out, 'report.json'));
    for (const item of report.items as Array<{ status: string; journal: string }>) {
      expect(item).toMatchObject({
        status: 'succeeded',
        journal:
          'the embedded emulator of the earlier run is gone with its files and generations: processed again',
      });
    }
    expect(report.items).toHaveLength(2);
  }, 90_000);
});
