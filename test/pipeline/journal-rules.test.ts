/**
 * The journal's pure rules: the crash policy both ways, the resume decision table, phases, the
 * recipe hash and the network-filesystem detection (with a fake mountinfo text).
 */
import { describe, expect, it } from 'vitest';
import { type Item, newItem, stepOf, withStep } from '../../src/pipeline/item.ts';
import { lostAnswerReason } from '../../src/pipeline/stages/submit.ts';
import {
  canonicalJson,
  decide,
  isOutcomeUnknown,
  JOURNAL_TEXTS,
  type JournalAction,
  type JournalRow,
  mountOf,
  networkMountOf,
  parseMountInfo,
  phaseOf,
  recipeHash,
  unknownSubmissionPolicy,
} from '../../src/pipeline/store/sqlite/index.ts';
import { statusKind } from '../../src/pipeline/store/status-summary.ts';
import { flatView, type ItemPatch, patchItem } from '../helpers/item-patch.ts';

const NOW = 1_800_000_000_000;
const KEY = { contentHash: 'c1', recipeHash: 'r1' };

/** A planned item (its request planned) with `patch` applied. */
function item(patch: ItemPatch = {}): Item {
  const request = { type: 'image_edit', prompt: 'p', source: { file_id: '$input' } };
  return patchItem(
    { ...newItem('a/photo.jpg', '/in/a/photo.jpg', 10, 1), state: 'planned' },
    { request, ...patch },
  );
}

function row(it: Item, patch: Partial<JournalRow> = {}): JournalRow {
  const liveState = patch.liveState ?? it.state;
  return {
    id: 1,
    outDir: '/out',
    input: it.input,
    place: it.input,
    contentHash: KEY.contentHash,
    recipeHash: KEY.recipeHash,
    item: it,
    liveState,
    phase: phaseOf(it, liveState),
    outcomeUnknown: isOutcomeUnknown(it, liveState),
    uploadedAt: NOW - 1000,
    outputs: null,
    batchId: 1,
    createdAt: NOW - 5000,
    updatedAt: NOW - 1000,
    supersededAt: null,
    ...patch,
  };
}

const uploaded = item({ state: 'uploaded', upload: { mode: 'inline', fileId: 'file-1', sha256: null } });
const submitting = patchItem(uploaded, { requestId: 'req-1', attempts: 1 });
const submitted = patchItem(submitting, { state: 'submitted', generationId: 'gen-1' });
const reported = patchItem(submitted, {
  state: 'reported' as const,
  generation: { state: 'completed', failure_code: null, failure_reason: null },
  outputs: ['a/photo.jpg/output-0.png'],
});

function decideFor(r: JournalRow | null, over: Partial<Parameters<typeof decide>[0]> = {}) {
  return decide({
    row: r,
    fresh: item({ absPath: '/moved/a/photo.jpg' }),
    key: KEY,
    force: false,
    resubmitUnknown: false,
    retryFailed: false,
    now: NOW,
    uploadReuseMaxAgeMs: 24 * 3600_000,
    outputs: null,
    ...over,
  });
}

describe('crash policy: a create whose outcome is unknown', () => {
  it('fails the item by default, naming the request id and the flag, and never resubmits', () => {
    const out = unknownSubmissionPolicy({ item: submitting, liveState: 'uploaded' }, false);
    expect(out?.action).toBe('fail');
    expect(out?.item.state).toBe('failed');
    expect(out?.item.failedAt).toBe('submit');
    expect(stepOf(out!.item).requestId).toBe('req-1');
    expect(out?.item.reason).toBe(JOURNAL_TEXTS.unknownOutcome('req-1'));
    expect(out?.item.reason).toContain('req-1');
    expect(out?.item.reason).toContain('--resubmit-unknown');
  });

  it('with --resubmit-unknown sends the item back to submit, keeping the old request id as an earlier attempt', () => {
    const out = unknownSubmissionPolicy({ item: submitting, liveState: 'uploaded' }, true);
    expect(out?.action).toBe('resubmit');
    expect(out?.item.state).toBe('uploaded');
    expect(stepOf(out!.item).requestId).toBeNull();
    expect(stepOf(out!.item).generationId).toBeNull();
    expect(stepOf(out!.item).upload?.fileId).toBe('file-1');
    expect(stepOf(out!.item).earlierAttempts).toEqual([
      {
        generation_id: null,
        request_id: 'req-1',
        failure_code: null,
        failure_reason: JOURNAL_TEXTS.resubmittedUnknown,
      },
    ]);
  });

  it('applies to a lost create answer and to its own earlier verdict, not to a rejected create', () => {
    const lost = {
      ...submitting,
      state: 'failed' as const,
      failedAt: 'submit' as const,
      reason: lostAnswerReason('req-1'),
    };
    expect(unknownSubmissionPolicy({ item: lost, liveState: 'failed' }, true)?.action).toBe('resubmit');
    const verdict = unknownSubmissionPolicy({ item: submitting, liveState: 'uploaded' }, false)!.item;
    expect(unknownSubmissionPolicy({ item: verdict, liveState: 'failed' }, true)?.action).toBe('resubmit');
    const rejected = {
      ...submitting,
      state: 'failed' as const,
      failedAt: 'submit' as const,
      reason: 'prompt: too long',
    };
    expect(unknownSubmissionPolicy({ item: rejected, liveState: 'failed' }, true)).toBeNull();
    expect(unknownSubmissionPolicy({ item: submitted, liveState: 'submitted' }, true)).toBeNull();
    expect(unknownSubmissionPolicy({ item: uploaded, liveState: 'uploaded' }, true)).toBeNull();
  });

  it('recognises a lost answer or its verdict in the words an earlier genpipe journaled them in', () => {
    const [lostBefore, verdictBefore] = JOURNAL_TEXTS.earlierUnknownReasons('req-1');
    expect(lostBefore).toContain('look it up by X-Request-Id req-1');
    expect(verdictBefore).toContain('submission outcome unknown after an interruption (request id req-1)');
    for (const reason of [lostBefore!, verdictBefore!]) {
      const old = { ...submitting, state: 'failed' as const, failedAt: 'submit' as const, reason };
      expect(phaseOf(old, 'failed')).toBe('submitting');
      expect(unknownSubmissionPolicy({ item: old, liveState: 'failed' }, false)?.item.reason).toBe(
        JOURNAL_TEXTS.unknownOutcome('req-1'),
      );
    }
  });

  it('treats a stopped item that was submitting as submitting', () => {
    const stopped = { ...submitting, state: 'stopped' as const, reason: 'not processed' };
    expect(phaseOf(stopped, 'uploaded')).toBe('submitting');
    expect(unknownSubmissionPolicy({ item: stopped, liveState: 'uploaded' }, false)?.action).toBe('fail');
  });
});

describe('phases', () => {
  it('reads how far an item got, through stops and failures', () => {
    expect(phaseOf(item(), 'planned')).toBe('local');
    expect(phaseOf(item({ state: 'skipped' }), 'skipped')).toBe('local');
    expect(phaseOf(item({ state: 'failed', failedAt: 'check' }), 'failed')).toBe('local');
    expect(phaseOf(uploaded, 'uploaded')).toBe('uploaded');
    expect(phaseOf(submitting, 'uploaded')).toBe('submitting');
    expect(phaseOf(submitted, 'submitted')).toBe('submitted');
    expect(phaseOf({ ...submitted, state: 'stopped' }, 'submitted')).toBe('submitted');
    expect(phaseOf({ ...submitted, state: 'failed', failedAt: 'download' }, 'failed')).toBe('submitted');
    expect(phaseOf({ ...submitted, state: 'failed', failedAt: 'wait' }, 'failed')).toBe('failed');
    expect(phaseOf({ ...uploaded, state: 'failed', failedAt: 'upload' }, 'failed')).toBe('failed');
    expect(phaseOf(reported, 'reported')).toBe('reported');
  });
});

describe('resume decisions', () => {
  it('takes a file never seen fresh', () => {
    const d = decideFor(null);
    expect(d).toMatchObject({ action: 'fresh', reason: null, supersede: false });
  });

  it('redoes everything with --force, and a changed file or recipe, in a new row', () => {
    const r = row(reported, { outputs: [] });
    expect(decideFor(r, { force: true })).toMatchObject({
      action: 'fresh',
      reason: JOURNAL_TEXTS.forced,
      supersede: true,
    });
    expect(decideFor(r, { key: { ...KEY, contentHash: 'c2' } })).toMatchObject({
      action: 'fresh',
      reason: JOURNAL_TEXTS.contentChanged,
      supersede: true,
    });
    expect(decideFor(r, { key: { ...KEY, recipeHash: 'r2' } })).toMatchObject({
      action: 'fresh',
      reason: JOURNAL_TEXTS.recipeChanged,
      supersede: true,
    });
  });

  it('polls a submitted generation instead of submitting again', () => {
    const d = decideFor(row({ ...submitted, state: 'stopped' }, { liveState: 'submitted' }));
    expect(d.action).toBe('resume');
    expect(d.item.state).toBe('submitted');
    expect(stepOf(d.item).generationId).toBe('gen-1');
    expect(d.item.absPath).toBe('/moved/a/photo.jpg');
  });

  it('submits an uploaded item with its file id, unless the upload is too old to reuse', () => {
    const d = decideFor(row(uploaded));
    expect(d.action).toBe('resume');
    expect(d.item.state).toBe('uploaded');
    expect(stepOf(d.item).upload?.fileId).toBe('file-1');
    const old = decideFor(row(uploaded, { uploadedAt: NOW - 25 * 3600_000 }));
    expect(old).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.uploadTooOld });
  });

  it('applies the crash policy to a row found submitting, both ways', () => {
    const r = row(submitting, { liveState: 'uploaded' });
    const byDefault = decideFor(r);
    expect(byDefault.action).toBe('fail');
    expect(byDefault.item.state).toBe('failed');
    expect(byDefault.item.reason).toBe(JOURNAL_TEXTS.unknownOutcome('req-1'));
    const resubmit = decideFor(r, { resubmitUnknown: true });
    expect(resubmit.action).toBe('resume');
    expect(resubmit.item.state).toBe('uploaded');
    expect(stepOf(resubmit.item).requestId).toBeNull();
  });

  it('skips a finished item whose outputs are complete, and downloads again when they are not', () => {
    const r = row(reported, { outputs: [{ path: 'a/photo.jpg/output-0.png', bytes: 5 }] });
    const ok = { complete: true, resultPresent: true, problems: [] };
    expect(decideFor(r, { outputs: ok })).toMatchObject({ action: 'done', reason: JOURNAL_TEXTS.done });
    const noResult = decideFor(r, { outputs: { ...ok, resultPresent: false } });
    expect(noResult.action).toBe('resume');
    expect(noResult.item.state).toBe('downloaded');
    const partial = decideFor(r, {
      outputs: {
        complete: false,
        resultPresent: true,
        problems: ['a/photo.jpg/output-0.png has 2 bytes, 5 expected'],
      },
    });
    expect(partial.action).toBe('resume');
    expect(partial.item.state).toBe('submitted');
    expect(stepOf(partial.item).outputs).toEqual([]);
    expect(stepOf(partial.item).generationId).toBe('gen-1');
    expect(partial.reason).toContain('has 2 bytes, 5 expected');
  });

  it('keeps a failure at the service, and redoes a local failure', () => {
    const atService = row({ ...submitted, state: 'failed', failedAt: 'wait', reason: 'generation failed' });
    expect(decideFor(atService)).toMatchObject({ action: 'done' });
    expect(decideFor(atService).item.reason).toBe('generation failed');
    const local = row(item({ state: 'failed', failedAt: 'check', reason: 'too big' }));
    expect(decideFor(local)).toMatchObject({ action: 'fresh', supersede: false });
  });
});

describe('resume decisions: an item that uploaded nothing', () => {
  const DAY_AND_HOUR = 25 * 3600_000;
  /** A prompt file ready to submit: its text is in the request, nothing was uploaded for it. */
  const prompt = (refs: Record<string, unknown> = {}) =>
    patchItem(
      { ...newItem('a.txt', '/in/a.txt', 10, 1), state: 'planned', inputAs: 'prompt' },
      { request: { type: 'image', model: 'uni-1', prompt: 'a small fox', ...refs }, state: 'uploaded' },
    );
  const freshPrompt = {
    ...newItem('a.txt', '/in/a.txt', 10, 1),
    state: 'planned' as const,
    inputAs: 'prompt' as const,
  };

  it('is submitted as it is however old its row, without a word about an old upload', () => {
    const d = decideFor(row(prompt(), { uploadedAt: NOW - DAY_AND_HOUR }), { fresh: freshPrompt });
    expect(d.action).toBe('resume');
    expect(d.item.state).toBe('uploaded');
    // Nothing was sent for it: continued, not resumed (status calls it not yet submitted).
    expect(d.reason).toBe('continued: prompt ready, submitting');
    expect(d.nothingSent).toBe(true);
    expect(d.reason).not.toContain(JOURNAL_TEXTS.uploadTooOld);
  });

  it('is retried from its request after a retryable failure however old its row', () => {
    const failed = patchItem(prompt(), {
      state: 'failed' as const,
      failedAt: 'wait' as const,
      reason: 'generation failed',
      requestId: 'req-1',
      generationId: 'gen-1',
      generation: { state: 'failed', failure_code: 'generation_failed', failure_reason: 'generation failed' },
    });
    const d = decideFor(row(failed, { uploadedAt: NOW - DAY_AND_HOUR }), { fresh: freshPrompt });
    expect(d.action).toBe('resume');
    expect(d.retried).toBe(true);
    expect(d.reason).not.toContain(JOURNAL_TEXTS.uploadTooOld);
  });

  it('still counts as uploaded when its request holds an uploaded reference', () => {
    const withRef = prompt({ image_ref: [{ file_id: 'file-ref-1' }] });
    const d = decideFor(row(withRef, { uploadedAt: NOW - DAY_AND_HOUR }), { fresh: freshPrompt });
    expect(d).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.uploadTooOld });
  });
});

describe('genpipe status: each row told as the next run takes it up', () => {
  it('names the kind of every phase', () => {
    const failedAt = (code: string | null) =>
      patchItem(submitted, {
        state: 'failed' as const,
        failedAt: 'wait' as const,
        reason: 'generation failed',
        generation: { state: 'failed', failure_code: code, failure_reason: 'generation failed' },
      });
    const cases: Array<[JournalRow, string]> = [
      [row(reported), 'done'],
      [row(patchItem(submitted, { state: 'downloaded' as const })), 'downloaded'],
      [row({ ...submitted, state: 'stopped' }, { liveState: 'submitted' }), 'at the service'],
      [row(submitting, { liveState: 'uploaded' }), 'outcome unknown'],
      [row(uploaded), 'not yet submitted'],
      [row(uploaded, { uploadedAt: NOW - 25 * 3600_000 }), 'not yet submitted'],
      [row(item()), 'not yet submitted'],
      [row(item({ state: 'failed', failedAt: 'check', reason: 'too big' })), 'failed before the service'],
      [row(item({ state: 'skipped', reason: 'no rule' })), 'skipped'],
      [row(failedAt('generation_failed')), 'failed, retried by a re-run'],
      [row(failedAt('content_moderated')), 'failed, not retried'],
    ];
    expect(cases.map(([r]) => statusKind(r))).toEqual(cases.map(([, kind]) => kind));
  });
});

describe('the decision table: a failed item on a re-run', () => {
  const generationFailed = patchItem(submitted, {
    state: 'failed' as const,
    failedAt: 'wait' as const,
    reason: 'generation_failed: internal model error',
    generation: {
      state: 'failed',
      failure_code: 'generation_failed',
      failure_reason: 'internal model error',
    },
    failure: { kind: 'generation_failed', retryable: true },
  });
  const moderated = patchItem(generationFailed, {
    reason: 'content_moderated: the prompt was refused',
    generation: {
      state: 'failed',
      failure_code: 'content_moderated',
      failure_reason: 'the prompt was refused',
    },
    failure: { kind: 'content_moderated', retryable: false },
  });
  const rateLimitedAtSubmit = {
    ...submitting,
    state: 'failed' as const,
    failedAt: 'submit' as const,
    reason: 'Too many requests',
    failure: { kind: 'rate limited (HTTP 429)', retryable: true },
  };
  const refusedUpload = {
    ...item({ state: 'failed', failedAt: 'upload', reason: 'file refused' }),
    failure: { kind: 'file refused by the service', retryable: false },
  };
  const retryableUpload = {
    ...refusedUpload,
    reason: 'Service unavailable',
    failure: { kind: 'HTTP 503', retryable: true },
  };
  const attempt = {
    generation_id: 'gen-1',
    request_id: 'req-1',
    failure_code: 'generation_failed',
    failure_reason: 'internal model error',
  };

  const cases: Array<{
    name: string;
    row: JournalRow;
    over?: Partial<Parameters<typeof decide>[0]>;
    action: JournalAction;
    reason: string;
    retried: boolean;
  }> = [
    {
      name: 'retryable failure_code, recent upload: resubmitted from the upload',
      row: row(generationFailed),
      action: 'resume',
      reason: JOURNAL_TEXTS.retried('generation_failed', 'retryable'),
      retried: true,
    },
    {
      name: 'retryable failure_code, old upload: processed again',
      row: row(generationFailed, { uploadedAt: NOW - 25 * 3600_000 }),
      action: 'fresh',
      reason: `${JOURNAL_TEXTS.retried('generation_failed', 'retryable')}; ${JOURNAL_TEXTS.uploadTooOld}`,
      retried: true,
    },
    {
      name: '429s that outlasted every retry at submit',
      row: row(rateLimitedAtSubmit),
      action: 'resume',
      reason: JOURNAL_TEXTS.retried('rate limited (HTTP 429)', 'retryable'),
      retried: true,
    },
    {
      name: 'a 503 at upload: uploaded again',
      row: row(retryableUpload),
      action: 'fresh',
      reason: JOURNAL_TEXTS.retried('HTTP 503', 'retryable'),
      retried: true,
    },
    {
      name: 'the file’s own failure_code: kept',
      row: row(moderated),
      action: 'done',
      reason: JOURNAL_TEXTS.failedNotRetried('content_moderated'),
      retried: false,
    },
    {
      name: 'the file’s own failure_code with --retry-failed: resubmitted',
      row: row(moderated),
      over: { retryFailed: true },
      action: 'resume',
      reason: JOURNAL_TEXTS.retried('content_moderated', 'flag'),
      retried: true,
    },
    {
      name: 'a file the service refused: kept',
      row: row(refusedUpload),
      action: 'done',
      reason: JOURNAL_TEXTS.failedNotRetried('file refused by the service'),
      retried: false,
    },
    {
      name: 'a file the service refused, with --retry-failed: uploaded again',
      row: row(refusedUpload),
      over: { retryFailed: true },
      action: 'fresh',
      reason: JOURNAL_TEXTS.retried('file refused by the service', 'flag'),
      retried: true,
    },
    {
      name: 'an older row without a recorded failure: judged by its failure_code',
      row: row({ ...generationFailed, failure: undefined }),
      action: 'resume',
      reason: JOURNAL_TEXTS.retried('generation_failed', 'retryable'),
      retried: true,
    },
    {
      name: 'an older row with nothing to judge by: kept',
      row: row({ ...rateLimitedAtSubmit, failure: undefined }),
      action: 'done',
      reason: JOURNAL_TEXTS.failedNotRetried(null),
      retried: false,
    },
    {
      name: 'budget_exhausted (the account’s problem, not the file’s)',
      row: row(
        patchItem(generationFailed, {
          failure: undefined,
          generation: { state: 'failed', failure_code: 'budget_exhausted', failure_reason: 'funds ran out' },
        }),
      ),
      action: 'resume',
      reason: JOURNAL_TEXTS.retried('budget_exhausted', 'retryable'),
      retried: true,
    },
    {
      name: 'a create whose outcome is unknown: the crash policy, even with --retry-failed',
      row: row(submitting, { liveState: 'uploaded' }),
      over: { retryFailed: true },
      action: 'fail',
      reason: JOURNAL_TEXTS.unknownOutcome('req-1'),
      retried: false,
    },
    {
      name: '--force: redone in a new row',
      row: row(moderated),
      over: { force: true },
      action: 'fresh',
      reason: JOURNAL_TEXTS.forced,
      retried: false,
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const d = decideFor(c.row, c.over);
      expect(d.action).toBe(c.action);
      expect(d.reason).toBe(c.reason);
      expect(d.retried === true).toBe(c.retried);
    });
  }

  it('resubmits from the upload with a new create, keeping the failed attempt', () => {
    const d = decideFor(
      row(patchItem(generationFailed, { earlierAttempts: [{ ...attempt, generation_id: 'gen-0' }] })),
    );
    expect(flatView(d.item)).toMatchObject({
      state: 'uploaded',
      upload: { fileId: 'file-1' },
      requestId: null,
      generationId: null,
      generation: null,
      reason: null,
      failedAt: null,
      failure: null,
      absPath: '/moved/a/photo.jpg',
    });
    expect(stepOf(d.item).earlierAttempts).toEqual([{ ...attempt, generation_id: 'gen-0' }, attempt]);
  });

  it('starts afresh, keeping the failed attempt, when the upload is too old', () => {
    const d = decideFor(row(generationFailed, { uploadedAt: NOW - 25 * 3600_000 }));
    expect(d.item.state).toBe('planned');
    expect(stepOf(d.item).generationId).toBeNull();
    expect(stepOf(d.item).earlierAttempts).toEqual([attempt]);
  });

  it('keeps the item as it was when it is not retried', () => {
    const d = decideFor(row(moderated));
    expect(flatView(d.item)).toMatchObject({
      state: 'failed',
      generationId: 'gen-1',
      reason: moderated.reason,
    });
    expect(stepOf(d.item).earlierAttempts).toBeUndefined();
  });
});

describe('recipe hash', () => {
  const planned = item({
    inputAs: 'source',
    request: {
      type: 'image_edit',
      prompt: 'watercolor',
      source: { file_id: '$input' },
      image_ref: [{ file_id: '$ref:style' }],
    },
  });

  it('is the same for the same request written in another key order', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe('{"a":[2,{"c":4,"d":3}],"b":1}');
    const reordered = patchItem(planned, {
      request: {
        image_ref: [{ file_id: '$ref:style' }],
        source: { file_id: '$input' },
        prompt: 'watercolor',
        type: 'image_edit',
      },
    });
    expect(recipeHash(reordered, { style: 's1' })).toBe(recipeHash(planned, { style: 's1' }));
  });

  it('changes with the request, input_as, a reference’s bytes and the service, not with the rule', () => {
    const base = recipeHash(planned, { style: 's1' });
    expect(
      recipeHash(withStep(planned, { request: { ...stepOf(planned).request, prompt: 'oil' } }), {
        style: 's1',
      }),
    ).not.toBe(base);
    expect(recipeHash({ ...planned, inputAs: 'image_ref' }, { style: 's1' })).not.toBe(base);
    expect(recipeHash(planned, { style: 's2' })).not.toBe(base);
    expect(recipeHash(planned, { style: 's1' }, 'https://api.example.com')).not.toBe(base);
    const otherRule: Item = { ...planned, rule: { index: 3, match: '*.jpg' } };
    expect(recipeHash(otherRule, { style: 's1' })).toBe(base);
    expect(() => recipeHash(planned, {})).toThrow(/style/);
  });
});

describe('network filesystem detection', () => {
  const MOUNTINFO = [
    '22 27 0:21 / /proc rw,relatime - proc proc rw',
    '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
    '40 27 0:50 / /mnt/share rw,relatime shared:30 - nfs4 fileserver:/export/media rw,vers=4.2',
    '41 40 254:1 / /mnt/share/local rw,relatime - ext4 /dev/vdb rw',
    '42 27 0:51 / /home/me/My\\040Drive rw - fuse.sshfs me@host:/data rw',
    '43 27 0:52 / /srv/win rw - cifs //nas/win rw',
    '44 27 0:53 / /mnt/c rw - 9p drvfs rw',
    'garbage line',
  ].join('\n');

  it('parses mount points, unescaping spaces', () => {
    const mounts = parseMountInfo(MOUNTINFO);
    expect(mounts).toHaveLength(7);
    expect(mounts.find((m) => m.fsType === 'fuse.sshfs')?.mountPoint).toBe('/home/me/My Drive');
  });

  it('finds the deepest mount holding a path', () => {
    const mounts = parseMountInfo(MOUNTINFO);
    expect(mountOf('/mnt/share/out/.genpipe/journal.db', mounts)?.fsType).toBe('nfs4');
    expect(mountOf('/mnt/share/local/journal.db', mounts)?.fsType).toBe('ext4');
    expect(mountOf('/mnt/shared/journal.db', mounts)?.fsType).toBe('ext4');
  });

  it('refuses NFS, SMB, sshfs and 9p, and accepts local disks', () => {
    expect(networkMountOf('/mnt/share/out/.genpipe/journal.db', MOUNTINFO)?.fsType).toBe('nfs4');
    expect(networkMountOf('/home/me/My Drive/out/journal.db', MOUNTINFO)?.fsType).toBe('fuse.sshfs');
    expect(networkMountOf('/srv/win/journal.db', MOUNTINFO)?.fsType).toBe('cifs');
    expect(networkMountOf('/mnt/c/Users/x/journal.db', MOUNTINFO)?.fsType).toBe('9p');
    expect(networkMountOf('/mnt/share/local/journal.db', MOUNTINFO)).toBeNull();
    expect(networkMountOf('/home/me/out/.genpipe/journal.db', MOUNTINFO)).toBeNull();
  });
});
