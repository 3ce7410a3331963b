/**
 * One write of the reports, in a process of its own (run by report-html.bench.ts):
 * `report-html-child.ts <new|before> <items> <out-dir>`. Builds the synthetic batch as a batch keeps it
 * (finished items in a view file on disk), then writes report.json and report.html with genpipe's
 * writer (`new`) or the renderer of before (`before`: report.json, then the page of
 * bench/baseline/report-html-before.ts), and prints one JSON line: the write's time, the process's
 * peak RSS during it (VmHWM, reset just before through /proc/self/clear_refs) and its peak heap (garbage
 * included); then writes them again, collecting garbage (`--expose-gc`) after every tenth of the items
 * read, for the heap the write holds: the largest heap seen then beyond what it had before the write
 * (less the small wrappers that count the reads).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Item } from '../src/pipeline/item.ts';
import {
  type ReportEntry,
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

/** An entry counting its reads: after every `every`-th, garbage is collected and the heap measured. */
class Counted implements ReportEntry {
  static reads = 0;
  static every = 1;
  static base = 0;
  static held = 0;
  readonly input: string;
  readonly place: string;
  readonly status: ReportEntry['status'];
  readonly journalCount: ReportEntry['journalCount'];
  constructor(private readonly at: ReportEntry) {
    this.input = at.input;
    this.place = at.place;
    this.status = at.status;
    this.journalCount = at.journalCount;
  }
  item(): Item {
    if (++Counted.reads % Counted.every === 0) {
      globalThis.gc?.();
      Counted.held = Math.max(Counted.held, process.memoryUsage().heapUsed - Counted.base);
    }
    return this.at.item();
  }
}

/** Writes both reports with the writer asked for. */
async function write(entries: readonly ReportEntry[]): Promise<void> {
  if (renderer === 'new') {
    await writeReportFiles(outDir!, entries, meta);
    return;
  }
  const head = reportHead(entries, meta);
  await writeReportJsonEntries(outDir!, head, entries, meta);
  await writeBefore(outDir!, head, entries, meta);
}

async function heldByWrite(entries: readonly ReportEntry[]): Promise<number> {
  const counted = entries.map((e) => new Counted(e));
  Counted.every = Math.max(1, Math.floor(entries.length / 10));
  globalThis.gc?.();
  Counted.base = process.memoryUsage().heapUsed;
  await write(counted);
  return Counted.held;
}

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
await write(snapshot.entries);
const writeMs = performance.now() - started;
clearInterval(sampler);
heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
const heapHeld = await heldByWrite(snapshot.entries);
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
    heapHeld,
  }),
);
