/**
 * report.html's failures grouped by cause: reasons that differ only in each file's details (sizes,
 * durations, request and file ids, names) count as one group, shown by an example with those details
 * marked; reasons of other causes (another stage, failure_code, HTTP status, state) stay apart.
 */
import { describe, expect, it } from 'vitest';
import { lostAnswerReason } from '../../src/pipeline/outcome-texts.ts';
import { FailureGroups } from '../../src/pipeline/report/index.ts';
import { reasonShape } from '../../src/pipeline/report/reason-shape.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/texts.ts';
import {
  fetchFailedDetail,
  fileNotReadyDetail,
  imageTooManyPixelsDetail,
  sourceVideoTooLongDetail,
} from '../../src/spec/index.ts';

type Failure = {
  stage: 'check' | 'submit' | 'upload' | 'wait' | 'download';
  failure_code: string | null;
  reason: string;
};

function uuid(i: number): string {
  const h = (n: number, w: number) => ((n * 2654435761) >>> 0).toString(16).padStart(8, '0').slice(0, w);
  return `${h(i + 1, 8)}-${h(i + 2, 4)}-4${h(i + 3, 3)}-8${h(i + 4, 3)}-${h(i + 5, 8)}${h(i + 6, 4)}`;
}

/** The i-th of 3,000 failures over 3 causes, each with the file's own details. */
function failure(i: number): Failure {
  switch (i % 3) {
    case 0:
      return {
        stage: 'check',
        failure_code: null,
        reason: imageTooManyPixelsDetail('source', 8001 + i, 20 + (i % 700)),
      };
    case 1:
      return { stage: 'submit', failure_code: null, reason: JOURNAL_TEXTS.unknownOutcome(uuid(i)) };
    default:
      return {
        stage: 'check',
        failure_code: null,
        reason: sourceVideoTooLongDetail('source', 30.01 + (i % 400) / 7, 30, 'video_reframe', false),
      };
  }
}

describe('failures grouped by cause', () => {
  it('counts 3,000 failures over 3 causes with per-file details as 3 groups', () => {
    const groups = new FailureGroups();
    const ids = Array.from({ length: 3000 }, (_, i) => groups.add(failure(i)));
    expect(groups.groups.map((g) => g.n)).toEqual([1000, 1000, 1000]);
    // Each failure is in its cause's group, and found there again.
    for (let i = 0; i < 3000; i++) {
      expect(ids[i]).toBe(i % 3);
      expect(groups.of(failure(i))).toBe(i % 3);
    }
    // The example is the first file's reason; the shape shows what differs as '…'.
    expect(groups.groups[0]!.reason).toBe(failure(0).reason);
    expect(groups.groups[0]!.shape).toBe(
      'source: image is … but each side must be <= 8000px. Resize and try again.',
    );
    expect(groups.groups[1]!.shape).toMatch(
      /^submission outcome unknown \(request id …\): the create may have/,
    );
    expect(groups.groups[2]!.shape).toBe(
      "source: video is … long but must be at most 30s for type 'video_reframe'",
    );

    // In the table: the example, the details that differ marked, the fixed ones (8000px, 30s) not.
    const html = groups.html(3000);
    expect(html).toContain(
      `<a href="#status=failed&amp;group=0">source: image is <var title="differs between these files">8001x20px</var> but each side must be &lt;= 8000px. Resize and try again.</a>`,
    );
    expect(html).toContain(
      `source: video is <var title="differs between these files">30.3s</var> long but must be at most 30s for type &#39;video_reframe&#39;`,
    );
    expect(html.match(/<tr class="failed"/g)).toHaveLength(3);
  });

  it('keeps causes apart: stage, failure_code, HTTP status, state, and the fixed words', () => {
    const groups = new FailureGroups();
    const reasons: Failure[] = [
      { stage: 'submit', failure_code: null, reason: fetchFailedDetail('source', 404) },
      { stage: 'submit', failure_code: null, reason: fetchFailedDetail('image_ref[2]', 502) },
      { stage: 'submit', failure_code: null, reason: fileNotReadyDetail('source', uuid(1), 'pending') },
      { stage: 'submit', failure_code: null, reason: fileNotReadyDetail('source', uuid(2), 'failed') },
      { stage: 'submit', failure_code: null, reason: lostAnswerReason(uuid(3)) },
      { stage: 'submit', failure_code: null, reason: JOURNAL_TEXTS.unknownOutcome(uuid(4)) },
      {
        stage: 'wait',
        failure_code: 'content_moderated',
        reason: 'content_moderated: The prompt was flagged.',
      },
      {
        stage: 'wait',
        failure_code: 'generation_failed',
        reason: 'generation_failed: The prompt was flagged.',
      },
      { stage: 'download', failure_code: null, reason: imageTooManyPixelsDetail('source', 9000, 30) },
      { stage: 'check', failure_code: null, reason: imageTooManyPixelsDetail('source', 9000, 30) },
    ];
    for (const r of reasons) groups.add(r);
    expect(groups.groups).toHaveLength(reasons.length);
    // The same cause again, with other details, joins its group and marks only what differs.
    groups.add({ stage: 'submit', failure_code: null, reason: fetchFailedDetail('source', 404) });
    groups.add({
      stage: 'submit',
      failure_code: null,
      reason: fileNotReadyDetail('source', uuid(9), 'pending'),
    });
    expect(groups.groups.map((g) => g.n)).toEqual([2, 1, 2, 1, 1, 1, 1, 1, 1, 1]);
    expect(groups.groups[0]!.shape).toBeUndefined();
    expect(groups.groups[2]!.shape).toBe(
      "source: file '…' is not ready (state 'pending'); poll the file until its state is 'ready'",
    );
  });

  it('shows a quoted value that differs in its quotes', () => {
    const groups = new FailureGroups();
    for (const ratio of ['4:5', '2:1'])
      groups.add({
        stage: 'submit',
        failure_code: null,
        reason: `Invalid aspect_ratio '${ratio}'. Valid: 16:9, 1:1, 9:16`,
      });
    expect(groups.groups).toHaveLength(1);
    expect(groups.groups[0]!.shape).toBe("Invalid aspect_ratio '…'. Valid: 16:9, 1:1, 9:16");
  });

  it('takes numbers, ids, paths, names and quoted values out of a reason, and keeps the words', () => {
    const shape = (r: string) => reasonShape(r).details;
    expect(shape('image_ref[1]: image exceeds 50 MB limit')).toEqual(['1', '50']);
    expect(shape('the outputs could not be downloaded: connect ECONNREFUSED 127.0.0.1:8787')).toEqual([
      '127.0.0.1:8787',
    ]);
    expect(shape('prompts/fox-1.txt is missing; the file’s copy fox.txt stays')).toEqual([
      'prompts/fox-1.txt',
      'fox.txt',
    ]);
    expect(shape("Invalid aspect_ratio '4:5'. Valid: 16:9, 1:1, 9:16")).toEqual([
      "'4:5'",
      '16:9',
      '1:1',
      '9:16',
    ]);
    expect(
      shape("wrong type: the file is a video (video/mp4), but rule 2 ('clips/*.mov') uses it as source"),
    ).toEqual(['video/mp4', '2', "'clips/*.mov'"]);
    // Apostrophes, plain quoted words, HTTP statuses and words with a slash between spaces stay.
    expect(shape("the file's bytes: type 'image_edit' (HTTP 502); start_frame / end_frame")).toEqual([]);
    const r = 'source: image is 9000x30px but each side must be <= 8000px. Resize and try again.';
    const s = reasonShape(r);
    expect(s.literals.join('')).not.toBe(r);
    expect(s.literals.map((l, k) => l + (s.details[k] ?? '')).join('')).toBe(r);
  });
});
