/**
 * Every example command of README.md and docs/*.md runs, as written, against a fresh emulator
 * (test/helpers/emulator.ts), and exits as expected (0 unless its block says otherwise). What counts as an
 * example, and how a block is marked as skipped or expected to exit otherwise: test/docs/doc-examples.ts.
 *
 * How a block runs: as one bash script, in a temporary folder of its own holding a copy of the fixture
 * below, its set-up lines in their place. `genpipe`, `npx genpipe` and `node bin/genpipe.js` are shell
 * functions that run this checkout's bin/genpipe.js with GENPIPE_BASE_URL and GENPIPE_API_KEY set to the
 * emulator's (over whatever the block exported: the docs' service URL and key are placeholders), and
 * GENPIPE_STORE, when the block sets it, to a database of the test's own PostgreSQL
 * (test/helpers/postgres.ts; the docs' store URL is a placeholder too); and record each command's exit
 * code. A command that runs until it is signalled (`watch`, `serve`,
 * `worker`) is started, stopped with SIGTERM as soon as it prints that it is ready (READY), and must then
 * exit as expected, as a user's Ctrl-C ends it.
 *
 * The fixture, for examples that need input files (name them so in the docs):
 * - `samples/`: a copy of the checkout's samples/ (the README's recipes copy from it and run it)
 * - `photos/`: samples/photos (three photos, one sidecar) and a genpipe.yaml editing each photo
 * - `inbox/`: the same genpipe.yaml, no file yet
 * - `photo.png`, `style.png`, `clip.mp4`: an image, the style reference and the clip of samples/
 * - `watercolor.yaml`: a recipe for photos/; `prices.yaml`: a price list; `request.json`: an image request
 * - `emulator.json`: an emulator configuration
 */
import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY, useTestEmulator } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { allExamples, type ExampleBlock, examplesIn } from './doc-examples.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'genpipe.js');
const SAMPLES = join(ROOT, 'samples');
/** A block that has not ended by then is stopped and fails. */
const BLOCK_TIMEOUT_MS = 240_000;
/** Text in the line each long-running command prints once it is ready: it is stopped then. */
const READY = ['] watch: ', 'dry run of watch: ', 'genpipe emulator listening on ', 'worker ready'];

const RECIPE = `rules:
  - match: "**/*.{jpg,jpeg,png,webp}"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "soft light" }
`;

async function makeFixture(dir: string): Promise<void> {
  await cp(SAMPLES, join(dir, 'samples'), { recursive: true });
  await cp(join(SAMPLES, 'photos'), join(dir, 'photos'), { recursive: true });
  await writeFile(join(dir, 'photos', 'genpipe.yaml'), RECIPE);
  await mkdir(join(dir, 'inbox'));
  await writeFile(join(dir, 'inbox', 'genpipe.yaml'), RECIPE);
  await cp(join(SAMPLES, 'photos', 'city.png'), join(dir, 'photo.png'));
  await cp(join(SAMPLES, 'refs', 'style.png'), join(dir, 'style.png'));
  await cp(join(SAMPLES, 'clips', 'pattern.mp4'), join(dir, 'clip.mp4'));
  await writeFile(join(dir, 'watercolor.yaml'), RECIPE.replace('soft light', 'watercolor, soft light'));
  await writeFile(
    join(dir, 'prices.yaml'),
    'image: 1\nimage_edit: 1\nvideo: 10\nvideo_edit: 10\nvideo_reframe: 10\n',
  );
  await writeFile(join(dir, 'emulator.json'), JSON.stringify({ queue_ms: 100 }));
  await writeFile(
    join(dir, 'request.json'),
    JSON.stringify({
      type: 'image',
      model: 'uni-1',
      prompt: 'a lighthouse in a storm',
      aspect_ratio: '16:9',
    }),
  );
}

/** The shell functions a block's script starts with (see the file's comment). */
const PRELUDE = `
__store() { if [ -n "\${GENPIPE_STORE-}" ]; then export GENPIPE_STORE="$__STORE"; fi; }
__call() { __store; GENPIPE_BASE_URL="$__URL" GENPIPE_API_KEY="$__KEY" "$__NODE" "$__BIN" "$@"; }
__long() {
  local fifo="$__TMP/ready-$__EX" pid line
  mkfifo "$fifo"
  __store
  # a simple command in the background: $! is genpipe's own pid, the one to signal
  GENPIPE_BASE_URL="$__URL" GENPIPE_API_KEY="$__KEY" "$__NODE" "$__BIN" "$@" >"$fifo" 2>&1 &
  pid=$!
  while IFS= read -r line; do
    printf '%s\\n' "$line"
    for ready in "\${__READY[@]}"; do
      case "$line" in *"$ready"*) kill -TERM "$pid" ;; esac
    done
  done <"$fifo"
  wait "$pid"
}
__run() {
  local id="$__EX" code
  printf '$ genpipe %s\\n' "$*" >&2
  case "\${1-}" in
    watch|serve|worker) __long "$@"; code=$? ;;
    *) __call "$@"; code=$? ;;
  esac
  printf '%s %s\\n' "$id" "$code" >>"$__RESULTS"
  return "$code"
}
genpipe() { __run "$@"; }
npx() { if [ "\${1-}" = genpipe ]; then shift; __run "$@"; else echo "npx $*: not run here" >&2; return 127; fi; }
node() { if [ "\${1-}" = bin/genpipe.js ]; then shift; __run "$@"; else command node "$@"; fi; }
`;

function scriptOf(block: ExampleBlock): string {
  const body = block.lines.map((l, k) => {
    if (l.kind === 'genpipe') return `__EX=${k}\n${l.text}`;
    if (l.kind === 'setup') return l.text;
    return `: not run: ${JSON.stringify(l.text)}`;
  });
  const ready = READY.map((r) => `'${r}'`).join(' ');
  return `__READY=(${ready})\n${PRELUDE}\n${body.join('\n')}\n`;
}

interface BlockRun {
  /** Exit code by the index of the command's line in block.lines. */
  codes: Map<number, number>;
  output: string;
}

/** Runs the block's script in `dir`; stops its whole process group after BLOCK_TIMEOUT_MS. */
async function runBlock(block: ExampleBlock, dir: string, url: string, store: string): Promise<BlockRun> {
  const results = join(dir, '.doc-example-results');
  await writeFile(results, '');
  const child = spawn('bash', ['-c', scriptOf(block)], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GENPIPE_'))),
      __URL: url,
      __KEY: KEY,
      __STORE: store,
      __NODE: process.execPath,
      __BIN: BIN,
      __RESULTS: results,
      __TMP: dir,
    },
  });
  let output = '';
  child.stdout.on('data', (d) => (output += String(d)));
  child.stderr.on('data', (d) => (output += String(d)));
  const timer = setTimeout(() => {
    output += `\n[doc-examples: still running after ${BLOCK_TIMEOUT_MS} ms: stopped]\n`;
    process.kill(-child.pid!, 'SIGKILL');
  }, BLOCK_TIMEOUT_MS);
  await new Promise((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  const codes = new Map<number, number>();
  for (const row of (await readFile(results, 'utf8')).split('\n').filter(Boolean)) {
    const [k, code] = row.split(' ').map(Number);
    codes.set(k!, code!);
  }
  return { codes, output };
}

const blocks = await allExamples(ROOT);
const ran: string[] = [];
const skipped: string[] = [];

describe('the example commands of README.md and docs/*.md', () => {
  const emu = useTestEmulator();
  const pg = usePostgres();
  let fixture: string;
  let work: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'genpipe-doc-examples-'));
    fixture = join(work, 'fixture');
    await makeFixture(fixture);
  });

  afterAll(async () => {
    const total = blocks.reduce((n, b) => n + b.lines.filter((l) => l.kind === 'genpipe').length, 0);
    const other = total - ran.length - skipped.length;
    console.log(
      `doc examples: ${ran.length} commands ran as expected, ${skipped.length} skipped` +
        (other > 0 ? `, ${other} not run here or not as expected (filtered out, or a block failed)` : '') +
        `\n${skipped.map((s) => `  skipped ${s}`).join('\n')}`,
    );
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('finds the examples: the docs hold some, and the README its three recipes', () => {
    expect(blocks.filter((b) => b.file === 'README.md' && b.skip === null).length).toBeGreaterThanOrEqual(4);
  });

  for (const [index, block] of blocks.entries()) {
    const commands = block.lines.filter((l) => l.kind === 'genpipe');
    const name = `${block.file}:${block.line}: ${commands.map((c) => c.text.split('\n')[0]).join(' · ')}`;
    if (block.skip !== null) {
      for (const c of commands) skipped.push(`${block.file}:${c.line} (${block.skip})`);
      it.skip(`${name} [skipped: ${block.skip}]`, () => {});
      continue;
    }
    it(name, { timeout: BLOCK_TIMEOUT_MS + 10_000 }, async () => {
      const dir = join(work, `block-${index}`);
      await cp(fixture, dir, { recursive: true });
      const run = await runBlock(block, dir, emu().url, pg.url());
      for (const [k, line] of block.lines.entries()) {
        if (line.kind !== 'genpipe') continue;
        const where = `${block.file}:${line.line}: ${line.text}`;
        expect(
          run.codes.get(k),
          `${where}\ndid not run or exited otherwise; the block's output:\n${run.output}`,
        ).toBe(block.exit);
        ran.push(where);
      }
    });
  }
});

describe('reading the examples (test/docs/doc-examples.ts)', () => {
  it('takes genpipe lines, set-up lines and here-documents; skips and exit codes from the annotation', () => {
    const md = [
      '```sh',
      'npm ci',
      'mkdir -p in',
      "cat > in/genpipe.yaml <<'EOF'",
      'rules: []',
      'EOF',
      '# a comment',
      'npx genpipe run in \\',
      '  --out out',
      'GENPIPE_STORE=x genpipe worker',
      '```',
      '',
      '<!-- example: exit 1 (no such id) -->',
      '',
      '```bash',
      'node bin/genpipe.js files get 123',
      '```',
      '<!-- example: skip (needs PostgreSQL) -->',
      '```sh',
      'genpipe worker',
      '```',
      '```sh',
      'ffmpeg -i a.mp4 b.mp4',
      '```',
      '```',
      'genpipe run not-shell',
      '```',
    ].join('\n');
    const found = examplesIn('x.md', md);
    expect(found.map((b) => [b.line, b.skip, b.exit])).toEqual([
      [1, null, 0],
      [15, null, 1],
      [19, 'needs PostgreSQL', 0],
    ]);
    expect(found[0]!.lines.map((l) => [l.line, l.kind])).toEqual([
      [2, 'not run'],
      [3, 'setup'],
      [4, 'setup'],
      [8, 'genpipe'],
      [10, 'genpipe'],
    ]);
    expect(found[0]!.lines[2]!.text).toBe("cat > in/genpipe.yaml <<'EOF'\nrules: []\nEOF");
    expect(found[0]!.lines[3]!.text).toBe('npx genpipe run in \\\n  --out out');
    expect(() => examplesIn('y.md', '<!-- example: maybe -->\n```sh\ngenpipe run a\n```')).toThrow(
      "y.md:1: '<!-- example: maybe -->' is not an example annotation",
    );
  });
});
