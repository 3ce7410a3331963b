/**
 * Flags live in named groups, each declared once: `--help` lists a command's flags under the headings
 * of the groups it takes, and a flag means the same on every command that takes it (its help text is
 * one text). Where two meanings are real — jobs in flight, files a worker holds — they are two flags.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from './run-cli.ts';

/** The environment of a user with no GENPIPE_* variable set. */
function plainEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GENPIPE_')));
}

/** A command's --help: its headings with the flags (long forms) under each, and each flag's help text. */
interface Help {
  groups: Map<string, string[]>;
  texts: Map<string, string>;
}

/** `genpipe <command> --help`, read as a person reads it: headings, flags under them, their texts. */
async function helpOf(command: string[]): Promise<Help> {
  const r = await runCli([...command, '--help'], plainEnv());
  expect(r.code, r.stderr).toBe(0);
  const groups = new Map<string, string[]>();
  const texts = new Map<string, string>();
  let heading: string | null = null;
  let flag: string | null = null;
  for (const line of r.stdout.split('\n')) {
    const item = /^ {2}(?:-\w, )?(--[\w-]+)(?: <[^>]+>)?\s+(.*)$/.exec(line);
    if (/^\S.*:$/.test(line)) {
      heading = line;
      flag = null;
      groups.set(heading, []);
    } else if (heading !== null && item) {
      flag = item[1]!;
      groups.get(heading)?.push(flag);
      texts.set(flag, item[2]!.trim());
    } else if (flag !== null && /^ {4,}\S/.test(line)) {
      texts.set(flag, `${texts.get(flag)} ${line.trim()}`);
    } else {
      flag = null;
    }
  }
  return { groups, texts };
}

describe('flag groups in --help', () => {
  it('run lists its flags under the groups it takes', async () => {
    const { groups } = await helpOf(['run']);
    expect([...groups.keys()]).toEqual(
      expect.arrayContaining([
        'Connection flags:',
        'Batch selection flags:',
        'Polling and pacing flags:',
        'Journal and store flags:',
        'Output and progress flags:',
        'Metrics flags:',
      ]),
    );
    expect(groups.get('Polling and pacing flags:')).toEqual(
      expect.arrayContaining([
        '--concurrency',
        '--poll-interval',
        '--max-reads',
        '--rate-window',
        '--retries',
      ]),
    );
    expect(groups.get('Connection flags:')).toEqual(
      expect.arrayContaining(['--api-key', '--base-url', '--legacy-base-url', '--legacy-token']),
    );
    expect(groups.get('Batch selection flags:')).toEqual(expect.arrayContaining(['--include', '--exclude']));
    expect(groups.get('Metrics flags:')).toEqual(['--metrics-port', '--metrics-host']);
  });

  it('worker takes the same polling, connection and metrics groups as run', async () => {
    const run = await helpOf(['run']);
    const worker = await helpOf(['worker']);
    for (const heading of ['Connection flags:', 'Metrics flags:']) {
      expect(worker.groups.get(heading), heading).toEqual(run.groups.get(heading));
    }
    expect(worker.groups.get('Polling and pacing flags:')).toEqual(
      expect.arrayContaining(run.groups.get('Polling and pacing flags:') ?? ['(none)']),
    );
  });

  it('a single command lists its polling and connection flags under the same headings', async () => {
    const { groups } = await helpOf(['generate']);
    expect(groups.get('Polling and pacing flags:')).toEqual(['--poll-interval']);
    expect(groups.get('Connection flags:')).toEqual(expect.arrayContaining(['--api-key', '--base-url']));
  });
});

describe('one meaning per flag', () => {
  it('--poll-interval and --concurrency read the same on run, watch, worker, demo and generate', async () => {
    const [run, ...others] = await Promise.all(
      ['run', 'watch', 'worker', 'generate', 'demo'].map((c) => helpOf([c])),
    );
    const [watch, worker, generate, demo] = others;
    for (const other of [watch, worker, generate]) {
      expect(other!.texts.get('--poll-interval')).toBe(run!.texts.get('--poll-interval'));
    }
    for (const other of [watch, worker, demo]) {
      expect(other!.texts.get('--concurrency')).toBe(run!.texts.get('--concurrency'));
    }
    expect(run!.texts.get('--concurrency')).toMatch(/^jobs in flight at the service at most/);
  });

  it("a worker's files held at once is a flag of its own", async () => {
    const { texts } = await helpOf(['worker']);
    expect(texts.get('--files-at-once')).toMatch(/^files a worker holds at once/);
    expect([...texts.keys()]).not.toContain('--max-jobs');
  });

  it('worker --max-jobs, the former name of its --concurrency, still taken, with a note', async () => {
    // A store nobody listens on: the note comes before the worker connects.
    const r = await runCli(['worker', '--store', 'postgres://u:p@127.0.0.1:9/db', '--max-jobs', '2'], {
      ...plainEnv(),
      GENPIPE_API_KEY: 'svc-api-flag-groups',
      GENPIPE_BASE_URL: 'http://127.0.0.1:9',
    });
    expect(r.stderr).toContain('genpipe: --max-jobs is now --concurrency (jobs at the service at most');
    expect(r.stderr).not.toMatch(/unknown option/);
  });
});
