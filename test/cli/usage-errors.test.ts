/**
 * Usage errors commander finds read like genpipe's own: a command group named without one of its
 * commands gets the one-line error and the pointer to its help (not the whole help), and with --json
 * every usage error is one JSON line on stderr, the exit code 2 all the same.
 */
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli } from './run-cli.ts';

describe('a command group without a command', () => {
  for (const [group, names] of [
    ['files', 'upload, list, get, delete'],
    ['generations', 'get, wait, download'],
    [
      'legacy',
      'modify, generate-video, generate-image, reframe-image, reframe-video, upscale, add-audio, get, list, delete, concepts, credits',
    ],
  ] as const) {
    it(`genpipe ${group}: one line and the pointer to its help, exit 2`, async () => {
      const r = await runCli([group], process.env);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(
        `genpipe: 'genpipe ${group}' needs a command: ${names}\nRun 'genpipe ${group} --help' for usage.\n`,
      );
    });
  }

  it('an unknown command of a group is still named, and `help <command>` still helps', async () => {
    const unknown = await runCli(['files', 'bogus'], process.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("genpipe: unknown command 'bogus'\nRun 'genpipe files --help' for usage.\n");
    const help = await runCli(['files', 'help', 'upload'], process.env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: genpipe files upload');
  });
});

describe('usage errors with --json', () => {
  const cases: Array<[string[], string]> = [
    [['run', 'in', '--out', 'out', '--json', '--bogus'], "unknown option '--bogus'"],
    [
      ['run', 'in', '--out', 'out', '--json', '--concurrency', 'abc'],
      "option '--concurrency <n>' argument 'abc' is invalid. expected a whole number of at least 1",
    ],
    [['generations', 'get', '--json'], "missing required argument 'id'"],
    [['status', '/no/such/out', '--json'], 'no journal at /no/such/out/.genpipe/journal.db'],
  ];
  for (const [args, message] of cases) {
    it(`genpipe ${args.join(' ')}: one JSON line, exit 2`, async () => {
      const r = await runCli(args, process.env);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      const { error } = JSON.parse(lines[0]!);
      expect(error).toMatchObject({ name: 'UsageError', code: 'GENPIPE_USAGE' });
      expect(error.message).toContain(message);
    });
  }
});

describe('--timeout without a wait', () => {
  // A service nothing listens at: a request sent would fail with exit 1, not 2.
  const env = {
    ...process.env,
    GENPIPE_API_KEY: 'svc-api-nowhere-key',
    GENPIPE_BASE_URL: 'http://127.0.0.1:9',
  };
  const cases: Array<[string[], string]> = [
    [
      ['generate', '--type', 'image', '--model', 'uni-1', '--prompt', 'a fox', '--timeout', '5'],
      '--wait or --out',
    ],
    [['files', 'upload', BIN, '--timeout', '5'], '--wait'],
    [
      [
        'legacy',
        'modify',
        '--media-url',
        'http://127.0.0.1:9/v.mp4',
        '--model',
        'ray-2',
        '--mode',
        'adhere_1',
        '--timeout',
        '5',
      ],
      '--wait or --out',
    ],
  ];
  for (const [args, waits] of cases) {
    it(`genpipe ${args[0] === 'generate' ? 'generate' : args.slice(0, 2).join(' ')} --timeout is refused before anything is sent`, async () => {
      const r = await runCli(args, env);
      expect(r.stderr).toBe(`genpipe: --timeout needs ${waits}: it limits the wait\n`);
      expect(r.code).toBe(2);
    });
  }
});

describe("genpipe's own flag checks point to the help as commander's do", () => {
  const SAMPLES = join(dirname(BIN), '..', 'samples');
  const cases: Array<[string[], string, RegExp]> = [
    [['run', 'in'], 'genpipe run', /--out <out-dir> is required/],
    [['watch', 'in'], 'genpipe watch', /--out <out-dir> is required/],
    [['run', SAMPLES, '--out', 'o', '--include', '/abs/**'], 'genpipe run', /--include '\/abs\/\*\*'/],
    [['run', 'in', '--out', 'o', '--price-list', 'p.yaml'], 'genpipe run', /--price-list .*--dry-run/],
    [['worker'], 'genpipe worker', /genpipe worker needs a store/],
    [
      ['worker', '--store', 'postgres://u:p@127.0.0.1:1/db', '--metrics-host', '0.0.0.0'],
      'genpipe worker',
      /--metrics-host needs --metrics-port/,
    ],
  ];
  for (const [args, command, message] of cases) {
    it(`genpipe ${args.join(' ')}: the problem, then Run '${command} --help' for usage.`, async () => {
      const r = await runCli(args, process.env);
      expect(r.code).toBe(2);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(message);
      expect(lines[1]).toBe(`Run '${command} --help' for usage.`);
    });
  }

  it('--price-list without --dry-run says what to add, plainly', async () => {
    const r = await runCli(['run', 'in', '--out', 'o', '--price-list', 'p.yaml'], process.env);
    expect(r.stderr).toContain(
      'genpipe: --price-list prices a dry run or the credits of a dashboard: add --dry-run or --dashboard',
    );
  });
});

describe('an id that cannot be one (every id of the service is a UUID)', () => {
  // A service nothing listens at: a request sent would fail with exit 1, not 2.
  const env = {
    ...process.env,
    GENPIPE_API_KEY: 'svc-api-nowhere-key',
    GENPIPE_BASE_URL: 'http://127.0.0.1:9',
    GENPIPE_LEGACY_TOKEN: 'legacy-nowhere-token',
    GENPIPE_LEGACY_BASE_URL: 'http://127.0.0.1:9/dream-machine/v1',
  };
  const cases: Array<[string[], string]> = [
    [['generations', 'get', 'not-a-uuid'], 'generation'],
    [['generations', 'wait', 'not-a-uuid'], 'generation'],
    [['generations', 'download', 'not-a-uuid', '--out', 'x'], 'generation'],
    [['files', 'get', 'not-a-uuid'], 'file'],
    [['files', 'delete', 'not-a-uuid'], 'file'],
    [['legacy', 'get', 'not-a-uuid'], 'generation'],
  ];
  for (const [args, what] of cases) {
    it(`genpipe ${args.join(' ')}: a usage error, exit 2, nothing sent`, async () => {
      const r = await runCli(args, env);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      const command = args.slice(0, 2).join(' ');
      expect(r.stderr).toBe(
        `genpipe: command-argument value 'not-a-uuid' is invalid for argument 'id'. expected a ${what} id: a UUID such as 0b0e6b8a-2f1c-4d5e-9a7b-3c2d1e0f4a5b\n` +
          `Run 'genpipe ${command} --help' for usage.\n`,
      );
    });
  }

  it('a UUID in capitals is an id still (it is sent)', async () => {
    const r = await runCli(['files', 'get', '0B0E6B8A-2F1C-4D5E-9A7B-3C2D1E0F4A5B'], env);
    expect(r.code, r.stderr).toBe(1);
  });
});

describe("commander's usage errors quote what was typed, made printable", () => {
  it('an escape sequence in an argument or an option name never reaches the terminal raw', async () => {
    const cases = [
      ['generations', 'get', '\u001b]0;pwned\u0007'],
      ['run', 'in', '--out', 'o', '--bo\u001b[31mgus'],
      ['run', 'in', '--out', 'o', '--concurrency', '\u001b[31m'],
    ];
    for (const args of cases) {
      const r = await runCli(args, process.env);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).not.toContain('\u001b');
      expect(r.stderr).not.toContain('\u0007');
      expect(r.stderr).toContain('\\x1b');
    }
  });
});
