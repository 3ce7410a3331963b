/**
 * A short password is masked where it stands (the password field of a URL), not wherever its letters
 * appear: with the store password `p`, the store's URL and the driver's words read as written.
 */
import { describe, expect, it } from 'vitest';
import { closedPort, useTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
const emu = useTestEmulator();

describe('a one-letter store password', () => {
  it('is masked in the URL only; the rest of the error reads as written', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const port = await closedPort();
    const url = `postgres://u:p@127.0.0.1:${port}/postgres`;
    const run = await runCli(['run', input, '--out', out, '--store', url], cliEnv(emu()));
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(
      `cannot connect to the store at postgres://u:[redacted]@127.0.0.1:${port}/postgres: `,
    );
    expect(run.stderr).toContain('ECONNREFUSED');
    expect(run.stderr).not.toContain('***');
    const status = await runCli(['status', out, '--store', url], cliEnv(emu()));
    expect(status.code).toBe(3);
    expect(status.stderr).toContain(`postgres://u:[redacted]@127.0.0.1:${port}/postgres`);
    expect(status.stderr).not.toContain('***');
  }, 60_000);
});
