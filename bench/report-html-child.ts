/**
 * One write of the reports, in a process of its own (run by report-html.bench.ts):
 * `report-html-child.ts <new|before> <items> <out-dir>`. Builds the synthetic batch as a batch keeps it
 * (finished items in a view file on disk), then writes report.json and report.html with genpipe's
 * writer (`new`) or the renderer of before (`before`: report.json, then the page of
 * bench/baseline/report-html-before.ts), and prints one JSON line: the write's time, the process's
 * peak RSS during it (VmHWM, reset just before through /proc/self/clear_refs) and its peak heap.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import {
  type ReportFilesMeta,
  reportHead,
  writeReportFiles,
  writeReportJsonEntries,
} from '../src/pipeline/report/index.ts';
import { BatchItems } from '../src/pipeline/runner/batch-items.ts';
import { ViewFile } from '../src/pipeline/runner/view-file.ts';
import { SYNTH_T0, synthItems } from '../test/pipeline/report-synthetic.ts';
import { writeReportHtmlEntries as writeBefore } from './baseline/report-html-before.ts';

const [renderer, count, outDir] = process.argv.slice(2);
const n = Number(count);

function kb(field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

const views = new ViewFile(outDir!);
const batch = new BatchItems(views);
for (const item of synthItems(n)) batch.keep(batch.nextEntry(), item);
const meta: ReportFilesMeta = {
  startedAt: SYNTH_T0,
  finishedAt: SYNTH_T0 + 600_000,
  now: SYNTH_T0 + 600_000,
  inputDir: '/in',
};

globalThis.gc?.();
const heapBefore = process.memoryUsage().heapUsed;
const rssBefore = kb('VmRSS');
let peakResetWorked = true;
try {
  writeFileSync('/proc/self/clear_refs', '5');
} catch {
  peakResetWorked = false;
}
let heapPeak = heapBefore;
const sampler = setInterval(() => {
  heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
}, 5);
const snapshot = batch.reportEntries();
const started = performance.now();
if (renderer === 'new') {
  await writeReportFiles(outDir!, snapshot.entries, meta);
} else {
  const head = reportHead(snapshot.entries, meta);
  await writeReportJsonEntries(outDir!, head, snapshot.entries, meta);
  await writeBefore(outDir!, head, snapshot.entries, meta);
}
const writeMs = performance.now() - started;
clearInterval(sampler);
heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
snapshot.release();
views.close();
console.log(
  JSON.stringify({
    writeMs,
    rssBefore,
    rssPeak: kb('VmHWM'),
    peakResetWorked,
    heapBefore,
    heapPeak,
  }),
);
