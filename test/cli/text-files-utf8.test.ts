/**
 * A recipe or a sidecar that is not UTF-8 text (saved as Latin-1 by an old editor) is refused naming
 * the file, the first byte that is not UTF-8 and where it is: a --recipe stops the command (exit 2),
 * a sidecar fails its own file while the others go on. Real child processes of the CLI.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { usePromptFolders } from './prompt-folder.ts';
import { runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();

/** `# café` in Latin-1: the 0xE9 at offset 5. */
const LATIN1_COMMENT = Buffer.from([0x23, 0x20, 0x63, 0x61, 0x66, 0xe9, 0x0a]);
const WHY = 'not valid UTF-8 text (byte 0xE9 at offset 5); save it as UTF-8';

it('a --recipe that is not UTF-8 is refused naming the file and the byte (exit 2)', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a fox' });
  const recipe = join(input, '..', 'latin1.yaml');
  writeFileSync(
    recipe,
    Buffer.concat([LATIN1_COMMENT, Buffer.from('rules:\n  - match: "*.txt"\n    input_as: prompt\n')]),
  );
  const r = await runCli(['run', input, '--out', out, '--recipe', recipe, '--dry-run'], process.env);
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toContain(`genpipe: ${recipe}: ${WHY}\n`);
  expect(r.stderr).not.toContain('ERR_ENCODING');
});

it('a sidecar that is not UTF-8 fails its own file naming it and the byte; the others go on', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a fox', 'b.txt': 'an owl' });
  writeFileSync(
    join(input, 'a.txt.json'),
    Buffer.concat([Buffer.from('{"n":"caf'), Buffer.from([0xe9, 0x22, 0x7d])]),
  );
  const r = await runCli(
    ['run', input, '--out', out, '--emulator', '--poll-interval', '1'],
    process.env,
    60_000,
  );
  expect(r.code, r.stderr + r.stdout).toBe(1);
  expect(r.stdout).toContain(
    'a.txt: failed at plan: sidecar a.txt.json: not valid UTF-8 text (byte 0xE9 at offset 9); save it as UTF-8',
  );
  expect(r.stdout).not.toContain('ERR_ENCODING');
  expect(r.stderr).toContain('2 files: 1 succeeded, 1 failed, 0 skipped');
}, 90_000);
