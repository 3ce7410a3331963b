import { describe, expect, it } from 'vitest';
import type { PipelineEvent } from '../../src/pipeline/events.ts';
import {
  createProgress,
  createRedactor,
  type ProgressStream,
  plainLine,
  printable,
  REDACTED,
  redactDeep,
} from '../../src/pipeline/progress/index.ts';
import { ttyLogLine } from '../../src/pipeline/progress/tty.ts';

const KEY = 'svc-api-0123456789abcdef';
const T = Date.UTC(2026, 0, 2, 12, 0, 0);

/** A stream that keeps what is written. */
function fakeStream(isTTY = false): ProgressStream & { text: () => string } {
  const chunks: string[] = [];
  return { isTTY, write: (c: string) => chunks.push(c), text: () => chunks.join('') };
}

/** A small batch's events: two files succeed, one fails (its reason quoting the key), one is skipped. */
const EVENTS: PipelineEvent[] = [
  { type: 'batch_started', at: T, input_dir: 'in', out_dir: 'out', emulator: true },
  { type: 'item_discovered', at: T + 10, input: 'photo.jpg', size: 2048 },
  { type: 'item_discovered', at: T + 10, input: 'clip.mp4', size: 3 * 1024 * 1024 },
  { type: 'item_discovered', at: T + 10, input: 'notes.md', size: 12 },
  { type: 'item_state', at: T + 1000, input: 'photo.jpg', state: 'sniffed', stage: 'sniff', reason: null },
  {
    type: 'item_state',
    at: T + 1000,
    input: 'notes.md',
    state: 'skipped',
    stage: 'plan',
    reason: 'no recipe rule matches',
  },
  { type: 'item_state', at: T + 2000, input: 'photo.jpg', state: 'submitted', stage: 'submit', reason: null },
  {
    type: 'item_state',
    at: T + 3000,
    input: 'clip.mp4',
    state: 'failed',
    stage: 'upload',
    reason: `Invalid API key (${KEY})`,
  },
  { type: 'item_state', at: T + 4000, input: 'photo.jpg', state: 'reported', stage: 'report', reason: null },
  { type: 'batch_stopping', at: T + 4500, reason: 'API client is suspended' },
  {
    type: 'batch_finished',
    at: T + 5000,
    totals: { inputs: 3, succeeded: 1, failed: 1, skipped: 1, unprocessed: 0 },
  },
];

describe('redaction', () => {
  it('replaces known secrets, key-shaped strings and bearer tokens', () => {
    const redact = createRedactor(['my-own-token-42', null, undefined, '', 'abc']);
    expect(redact('token my-own-token-42 and my-own-token-42!')).toBe(`token ${REDACTED} and ${REDACTED}!`);
    expect(redact(`key ${KEY} rejected`)).toBe(`key ${REDACTED} rejected`);
    expect(redact('Authorization: Bearer abcdefgh12345678')).toBe(`Authorization: Bearer ${REDACTED}`);
    // Short or empty "secrets" never mask ordinary words; ordinary "bearer" prose is left alone.
    expect(redact('abc bearer of news')).toBe('abc bearer of news');
    // Regex-special characters in a secret are taken literally.
    expect(createRedactor(['a+b*c(d)e'])('x a+b*c(d)e y')).toBe(`x ${REDACTED} y`);
    // The longer of two overlapping secrets is replaced whole.
    expect(createRedactor(['secret-1', 'secret-1-longer'])('secret-1-longer')).toBe(REDACTED);
  });

  it('redacts every string of a JSON value, keys included', () => {
    const redact = createRedactor(['hidden-value']);
    expect(redactDeep({ a: ['x hidden-value', 1, null], 'hidden-value': { b: true } }, redact)).toEqual({
      a: [`x ${REDACTED}`, 1, null],
      [REDACTED]: { b: true },
    });
  });

  it('makes control characters visible instead of acting on the terminal', () => {
    expect(printable('a\nb\u001b[2Jc\u009b')).toBe('a\\x0ab\\x1b[2Jc\\x9b');
    // Bidi controls and zero-width characters would reorder or hide the rest of the line.
    expect(printable('cat\u202Egpj.exe')).toBe('cat\\u{202e}gpj.exe');
    expect(printable('\u2066a\u2069\u200e\u200f\u200b\u200d\ufeffb')).toBe(
      '\\u{2066}a\\u{2069}\\u{200e}\\u{200f}\\u{200b}\\u{200d}\\u{feff}b',
    );
    expect(printable('été 東京')).toBe('été 東京');
  });
});

describe('plain progress', () => {
  it('writes one line per file event, failures and skips with their reason, no secret', () => {
    const out = fakeStream();
    const progress = createProgress({ json: false, isTTY: false, stream: out, utc: true });
    for (const e of EVENTS) progress.sink(e);
    progress.close();
    progress.sink(EVENTS[1]!); // ignored after close
    expect(out.text()).toBe(
      [
        '[12:00:00] run: in -> out (EMULATOR: not the real service)',
        '[12:00:00] photo.jpg: discovered (2.0 KiB)',
        '[12:00:00] clip.mp4: discovered (3.0 MiB)',
        '[12:00:00] notes.md: discovered (12 B)',
        '[12:00:01] photo.jpg: sniffed',
        '[12:00:01] notes.md: skipped: no recipe rule matches',
        '[12:00:02] photo.jpg: submitted',
        `[12:00:03] clip.mp4: failed at upload: Invalid API key (${REDACTED})`,
        '[12:00:04] photo.jpg: reported',
        '[12:00:04] stopping early: API client is suspended',
        '[12:00:05] finished: 3 inputs, 1 succeeded, 1 failed, 1 skipped',
        '',
      ].join('\n'),
    );
    expect(out.text()).not.toContain(KEY);
  });

  it('keeps a line per event even for a file name with a newline, and names unprocessed files', () => {
    const line = plainLine(
      {
        type: 'item_state',
        at: T,
        input: 'evil\nname.jpg',
        state: 'stopped',
        stage: null,
        reason: 'batch stopped',
      },
      { utc: true },
    );
    expect(line).toBe('[12:00:00] evil\\x0aname.jpg: not processed: batch stopped');
    const finished = plainLine(
      {
        type: 'batch_finished',
        at: T,
        totals: { inputs: 5, succeeded: 1, failed: 0, skipped: 0, unprocessed: 4 },
      },
      { utc: true },
    );
    expect(finished).toBe('[12:00:00] finished: 5 inputs, 1 succeeded, 0 failed, 0 skipped, 4 not processed');
  });

  it("names a chain's step: its start, end and failure in both modes, its other lines with -v, a failure on a terminal", () => {
    const event = (
      state: Extract<PipelineEvent, { type: 'item_state' }>['state'],
      reason: string | null,
      extra = {},
    ) =>
      ({
        type: 'item_state',
        at: T,
        input: 'a.png',
        step: 'animate',
        state,
        stage: 'wait',
        reason,
        ...extra,
      }) as PipelineEvent;
    const failed = event('checked', "step 'animate' failed: moderated", { step_event: 'failed' });
    const done = event('completed', "step 'animate' done", { step_event: 'done' });
    for (const verbose of [true, false]) {
      expect(plainLine(done, { utc: true, verbose })).toBe("[12:00:00] a.png: step 'animate' done");
      expect(plainLine(failed, { utc: true, verbose })).toBe(
        "[12:00:00] a.png: step 'animate' failed: moderated",
      );
    }
    expect(plainLine(event('completed', null), { utc: true })).toBe(
      "[12:00:00] a.png: step 'animate': completed",
    );
    expect(plainLine(event('completed', null), { utc: true, verbose: false })).toBeNull();
    expect(ttyLogLine(failed, (t) => t)).toBe("✗ a.png: step 'animate' failed: moderated");
    expect(ttyLogLine(done, (t) => t)).toBeNull();
  });

  it('says an item the journal reported as an earlier run left it in its own words, at no stage', () => {
    const failedBefore =
      "failed in an earlier run (content_moderated), not retried: the failure is the file's own";
    const fromJournal = (state: 'failed' | 'reported', reason: string): PipelineEvent => ({
      type: 'item_state',
      at: T,
      input: 'x.txt',
      place: 'x.txt',
      state,
      stage: null,
      reason,
      from_journal: true,
    });
    expect(plainLine(fromJournal('failed', failedBefore), { utc: true })).toBe(
      `[12:00:00] x.txt: ${failedBefore}`,
    );
    expect(plainLine(fromJournal('reported', 'already done in an earlier run'), { utc: true })).toBe(
      '[12:00:00] x.txt: already done in an earlier run',
    );
    expect(ttyLogLine(fromJournal('failed', failedBefore), (t) => t)).toBe(`✗ x.txt: ${failedBefore}`);
    // A file the batch did not get to says "not processed" once.
    const stopped = plainLine(
      {
        type: 'item_state',
        at: T,
        input: 'y.txt',
        state: 'stopped',
        stage: null,
        reason: 'not processed: the batch stopped early (service unavailable)',
      },
      { utc: true },
    );
    expect(stopped).toBe('[12:00:00] y.txt: not processed: the batch stopped early (service unavailable)');
  });

  it('uses local time by default', () => {
    const line = plainLine({ type: 'item_discovered', at: T, input: 'a', size: 1 })!;
    const d = new Date(T);
    const hh = String(d.getHours()).padStart(2, '0');
    expect(line.startsWith(`[${hh}:00:00] a:`)).toBe(true);
  });
});

describe('--json progress', () => {
  it('writes each event as exactly one JSON object per line, secrets masked', () => {
    const out = fakeStream(true);
    const progress = createProgress({ json: true, isTTY: true, stream: out, redact: createRedactor([KEY]) });
    for (const e of EVENTS) progress.sink(e);
    progress.close();
    const lines = out.text().trimEnd().split('\n');
    expect(lines).toHaveLength(EVENTS.length);
    const parsed = lines.map((l) => JSON.parse(l));
    const expected = EVENTS.map((e) => ({
      ...(e.type === 'item_state' && e.reason?.includes(KEY)
        ? { ...e, reason: `Invalid API key (${REDACTED})` }
        : e),
      at: new Date(e.at).toISOString(),
    }));
    expect(parsed).toEqual(expected);
    expect(out.text()).not.toContain(KEY);
  });
});

describe('createProgress', () => {
  it('picks json over a TTY, the live display on a TTY, else plain lines', () => {
    const event: PipelineEvent = { type: 'item_discovered', at: T, input: 'a.jpg', size: 1 };
    const json = fakeStream(true);
    createProgress({ json: true, stream: json }).sink(event);
    expect(JSON.parse(json.text())).toEqual({ ...event, at: new Date(T).toISOString() });

    const tty = fakeStream(true);
    const live = createProgress({ json: false, stream: tty, columns: 100 });
    live.sink(event);
    live.close();
    expect(tty.text()).toContain('genpipe');
    expect(tty.text()).toContain('stages');

    const plain = fakeStream(false);
    createProgress({ json: false, stream: plain, utc: true }).sink(event);
    expect(plain.text()).toBe('[12:00:00] a.jpg: discovered (1 B)\n');

    // An explicit isTTY wins over the stream's own flag.
    const forced = fakeStream(true);
    createProgress({ json: false, isTTY: false, stream: forced, utc: true }).sink(event);
    expect(forced.text()).toBe('[12:00:00] a.jpg: discovered (1 B)\n');
  });
});
