/**
 * The texts of genpipe's errors as a user reads them: real child processes of the CLI. A text genpipe
 * composes of several lines keeps its lines, while control characters of file names stay visible; each
 * text says what is really wrong.
 */
import { mkdir, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writePng } from '../client/client-helpers.ts';
import { tempDir } from '../media/fixtures.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { runCli } from './run-cli.ts';

let dir: string;
let remove: () => Promise<void>;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-error-texts-'));
  await put(dir, 'in/a.txt', 'a fox');
});
afterAll(() => remove());

/** The environment without any GENPIPE_* setting: nothing here gets as far as the service. */
function bareEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GENPIPE_')) env[k] = v;
  return env;
}

/** `genpipe run <dir>/in --out <dir>/out --recipe <recipe>` with the recipe text written first. */
async function runRecipe(name: string, text: string, extra: string[] = []) {
  const recipe = await put(dir, name, text);
  return runCli(['run', join(dir, 'in'), '--out', join(dir, 'out'), '--recipe', recipe, ...extra], bareEnv());
}

describe('recipe errors', () => {
  it('print every problem on its own line, a file name’s control characters still escaped', async () => {
    await mkdir(join(dir, 'bad\nrecipes'), { recursive: true });
    const name = 'bad\nrecipes/r\u001b[2J.yaml';
    const r = await runRecipe(
      name,
      'rules:\n  - match: "**/*.txt"\n    input_as: sauce\n    request: { type: image }\n  - match: 3\n    request: { type: image, prompt: x }\n',
    );
    expect(r.code).toBe(2);
    const shown = join(dir, 'bad\\x0arecipes', 'r\\x1b[2J.yaml');
    expect(r.stderr.split('\n')).toEqual([
      'genpipe: the recipe has 2 problems:',
      `${shown}:3: rules[0].input_as: must be one of source, start_frame, end_frame, image_ref, prompt, not 'sauce'`,
      `${shown}:5: rules[1].match: must be a glob string such as "**/*.jpg", not 3`,
      '',
    ]);
  });
  it('blame the field a detail is about, not a field named among its allowed values', async () => {
    const r = await runRecipe(
      'type-typo.yaml',
      'rules:\n  - match: "**/*.txt"\n    request:\n      model: uni-1\n      type: imagee\n',
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `genpipe: ${join(dir, 'type-typo.yaml')}:5: rules[0].request.type: Expected one of 'image', 'image_edit', 'video', 'video_edit', 'video_reframe' for type but received 'imagee'\n`,
    );
  });

  it('say how big a reference over 50 MB is', async () => {
    await writePng(join(dir, 'heavy.png'), 8, 8);
    await truncate(join(dir, 'heavy.png'), 53_000_000); // sparse: nothing is really written
    const r = await runRecipe(
      'heavy-ref.yaml',
      'rules:\n  - match: "**/*.txt"\n    request:\n      type: image\n      image_ref: [{ ref: big }]\nreferences:\n  big: heavy.png\n',
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `genpipe: ${join(dir, 'heavy-ref.yaml')}:5: rules[0].request.image_ref[0]: image_ref[0]: image exceeds 50 MB limit: the file is 50.5 MiB (53,000,000 bytes); the limit is 50.0 MiB (52,428,800 bytes)\n`,
    );
  });
});

describe('genpipe serve', () => {
  it('names the config file, the field and the shape it takes', async () => {
    const config = await put(dir, 'emulator.json', JSON.stringify({ processing_ms: 5 }));
    const r = await runCli(['serve', '--port', '0', '--config', config], bareEnv());
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `genpipe: ${config}: Expected processing_ms: { image: <ms>, video: <ms>, image_edit?: <ms>, video_edit?: <ms>, video_reframe?: <ms> } (each a number of ms, or [min, max]) but received 5\n`,
    );
    expect(r.stdout).toBe('');
  });

  it("names a config file it cannot read with the name's control characters escaped", async () => {
    const r = await runCli(['serve', '--port', '0', '--config', join(dir, 'no\u001b[2J.json')], bareEnv());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(dir, 'no\\x1b[2J.json')}`);
    expect(r.stderr).not.toContain('\u001b');
    expect(r.stdout).toBe('');
  });
});

describe('usage errors', () => {
  it('print the one problem and how to see help, not the whole help', async () => {
    const r = await runCli(['run', 'x', '--out', 'y', '--concurrency', 'abc'], bareEnv());
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "genpipe: option '--concurrency <n>' argument 'abc' is invalid. expected a whole number of at least 1\n" +
        "Run 'genpipe run --help' for usage.\n",
    );
    expect(r.stdout).toBe('');
  });

  it('do so for every command, naming the command', { timeout: 240_000 }, async () => {
    // Each command with the arguments it needs, so that the unknown option is the one problem.
    const commands: Array<[path: string, args: string[]]> = [
      ['serve', []],
      ['run', ['x']],
      ['watch', ['x']],
      ['demo', []],
      ['files upload', ['x']],
      ['files list', []],
      ['files get', ['x']],
      ['files delete', ['x']],
      ['generate', []],
      ['generations get', ['x']],
      ['generations wait', ['x']],
      ['generations download', ['x', '--out', 'o']],
      ['legacy modify', ['--media-url', 'u', '--model', 'ray-2', '--mode', 'flex_1']],
      ['legacy get', ['x']],
      ['', []],
    ];
    for (const [path, args] of commands) {
      const words = path === '' ? [] : path.split(' ');
      const r = await runCli([...words, ...args, '--no-such-flag'], bareEnv());
      const named = ['genpipe', ...words].join(' ');
      expect([r.code, r.stderr], named).toEqual([
        2,
        `genpipe: unknown option '--no-such-flag'\nRun '${named} --help' for usage.\n`,
      ]);
    }
  });

  it('an unknown command is one problem too, with the suggestion', async () => {
    const r = await runCli(['sevre'], bareEnv());
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "genpipe: unknown command 'sevre'\n(Did you mean serve?)\nRun 'genpipe --help' for usage.\n",
    );
  });

  it('serve: a bad --port or --data-dir is refused before anything is printed', async () => {
    const port = await runCli(['serve', '--port', 'abc'], bareEnv());
    expect([port.code, port.stdout]).toEqual([2, '']);
    expect(port.stderr).toBe(
      "genpipe: option '--port <port>' argument 'abc' is invalid. expected a port number, 0 to 65535\n" +
        "Run 'genpipe serve --help' for usage.\n",
    );
    const file = await put(dir, 'a-file', 'x');
    const data = await runCli(['serve', '--port', '0', '--data-dir', file], bareEnv());
    expect([data.code, data.stdout, data.stderr]).toEqual([
      2,
      '',
      `genpipe: --data-dir ${file} is a file, not a folder\n`,
    ]);
  });

  it('run --emulator: a refusal of the journal comes before the emulator banner', async () => {
    const journal = await put(dir, 'not-a-journal.db', 'hello');
    await put(
      dir,
      'in/genpipe.yaml',
      'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image }\n',
    );
    const r = await runCli(
      ['run', join(dir, 'in'), '--out', join(dir, 'out-j'), '--emulator', '--journal', journal],
      bareEnv(),
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^genpipe: .*not-a-journal\.db cannot be opened as a genpipe journal/);
    expect(r.stderr).not.toContain('EMULATOR MODE');
  });
});
