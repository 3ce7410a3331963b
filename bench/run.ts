/**
 * `npm run bench [name...]`: runs the benches, prints one table and writes bench/results/<name>.json.
 * Names: emulator-get, emulator-upload, emulator-chains, client-upload, client-pacing, pipeline-schedule,
 * pipeline-overhead, pipeline-discover, pipeline-journal, pipeline-quota, pipeline-scale, pipeline-chain,
 * watch-restart, report-html, dashboard, distributed, worker-session, same-content, startup (all when none given).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error a plain .mjs module without types
import { newestSourceMtime } from '../scripts/source-mtime.mjs';
import { benchClientPacing } from './client-pacing.bench.ts';
import { benchClientUpload } from './client-upload.bench.ts';
import { benchDashboard } from './dashboard.bench.ts';
import { benchDistributed } from './distributed.bench.ts';
import { benchGetThroughput, benchPresignedUploadMemory } from './emulator.bench.ts';
import { benchEmulatorChains } from './emulator-chains.bench.ts';
import { type BenchRow, printTable, ROOT, writeResult } from './lib.ts';
import { benchPipelineChain } from './pipeline-chain.bench.ts';
import { benchPipelineDiscover } from './pipeline-discover.bench.ts';
import { benchJournalOverhead } from './pipeline-journal.bench.ts';
import { benchPipelineOverhead } from './pipeline-overhead.bench.ts';
import { benchPipelineQuota } from './pipeline-quota.bench.ts';
import { benchPipelineScale } from './pipeline-scale.bench.ts';
import { benchPipelineSchedule } from './pipeline-schedule.bench.ts';
import { benchReportHtml } from './report-html.bench.ts';
import { benchSameContent } from './same-content.bench.ts';
import { benchStartup } from './startup.bench.ts';
import { benchWatchRestart } from './watch-restart.bench.ts';
import { benchWorkerSession } from './worker-session.bench.ts';

const BENCHES: Record<string, () => Promise<{ rows: BenchRow[]; data: unknown }>> = {
  'emulator-get': benchGetThroughput,
  'emulator-upload': benchPresignedUploadMemory,
  'emulator-chains': benchEmulatorChains,
  'pipeline-discover': benchPipelineDiscover,
  'pipeline-journal': benchJournalOverhead,
  'client-upload': benchClientUpload,
  'client-pacing': benchClientPacing,
  'pipeline-schedule': benchPipelineSchedule,
  'pipeline-overhead': benchPipelineOverhead,
  'pipeline-quota': benchPipelineQuota,
  'pipeline-scale': benchPipelineScale,
  'pipeline-chain': benchPipelineChain,
  'watch-restart': benchWatchRestart,
  'report-html': benchReportHtml,
  dashboard: benchDashboard,
  distributed: benchDistributed,
  'worker-session': benchWorkerSession,
  'same-content': benchSameContent,
  startup: benchStartup,
};

// A bench measures the bundle a user runs: after an edit, bin/genpipe.js would run the sources through
// tsx instead (~0.3 s and ~35 MB more per process), so a stale build is rebuilt first.
function builtFrom(): number {
  try {
    return JSON.parse(readFileSync(join(ROOT, 'dist', 'build.json'), 'utf8')).srcMtime ?? 0;
  } catch {
    return 0;
  }
}
if (builtFrom() < newestSourceMtime(join(ROOT, 'src'))) {
  process.stderr.write('dist/ is older than src/: building it first (npm run build)...\n');
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !(w in BENCHES));
if (unknown.length) {
  console.error(`unknown bench: ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}
const rows: BenchRow[] = [];
const all: Record<string, unknown> = {};
for (const name of wanted.length ? wanted : Object.keys(BENCHES)) {
  process.stderr.write(`running ${name}...\n`);
  const r = await BENCHES[name]!();
  rows.push(...r.rows);
  all[name] = r.data;
  writeResult(name, { name, at: new Date().toISOString(), rows: r.rows, data: r.data });
}
printTable(rows);
const failed = rows.filter((r) => r.pass === false);
if (failed.length) console.log(`\n${failed.length} target(s) missed`);
