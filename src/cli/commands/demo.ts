/**
 * `genpipe demo`: the whole pipeline in a few seconds, with nothing to set up — the embedded emulator
 * plus the bundled `samples/` folder (images, a video, prompt files, a sidecar, a layer stack, a chain) into
 * `out/demo` (relative to the working directory), ending with where to look. With `--workers <n>`, the
 * same through an embedded PostgreSQL and n worker processes (demo-workers.ts).
 */
import { join, relative } from 'node:path';
import type { Command } from 'commander';
import { REPORT_HTML_FILE } from '../../pipeline/report/out-dir-names.ts';
import { addExamples } from '../command-examples.ts';
import { intArg } from '../command-flags.ts';
import { addFlagGroups, POLLING } from '../flag-groups/index.ts';
import { checkOutDir } from '../out-dir-check.ts';
import { packageRoot } from '../package-root.ts';
import { UsageError } from '../usage-error.ts';

/** The bundled samples folder (next to package.json). */
export const SAMPLES_DIR = join(packageRoot(), 'samples');
/** Where the demo writes, relative to the working directory, unless --out says otherwise. */
export const DEMO_OUT_DIR = join('out', 'demo');

/** Flags of `genpipe demo`. */
interface DemoFlags {
  out?: string;
  concurrency?: number;
  workers?: number;
  json?: boolean;
  quiet?: boolean;
}

/** Registers `genpipe demo`. */
export function registerDemo(program: Command): void {
  const cmd = program
    .command('demo')
    .description(
      'Run the bundled samples through the embedded emulator into out/demo, then say where to look',
    )
    .option('-o, --out <out-dir>', `where the outputs and reports go (default ${DEMO_OUT_DIR})`)
    .option(
      '--workers <n>',
      'run it in distributed mode on this machine: an embedded PostgreSQL and n `genpipe worker` processes (--concurrency: the jobs each has in flight)',
      intArg(1),
    )
    .option('--json', 'one JSON object per event on stdout')
    .option('-q, --quiet', 'no progress, only the summary');
  addFlagGroups(cmd, [POLLING.only('--concurrency')]);
  addExamples(cmd, {
    examples: [
      { comment: 'the bundled samples into out/demo; then open out/demo/report.html', line: 'genpipe demo' },
      {
        comment: 'into another folder, 4 jobs at a time',
        line: 'genpipe demo --out out/my-demo --concurrency 4',
      },
      {
        comment: 'in distributed mode: an embedded PostgreSQL and 2 worker processes',
        line: 'genpipe demo --workers 2 --out out/demo-workers',
      },
    ],
  });
  cmd.action(async (flags: DemoFlags) => {
    const out = flags.out ?? DEMO_OUT_DIR;
    if (flags.workers !== undefined) {
      if (flags.json) throw new UsageError('--json is not available with --workers');
      await checkOutDir(out);
      const { executeDemoWorkers } = await import('./demo-workers.ts');
      await executeDemoWorkers(SAMPLES_DIR, {
        workers: flags.workers,
        out,
        ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
        ...(flags.quiet ? { quiet: true } : {}),
      });
    }
    const { executeRun } = await import('./run.ts');
    process.exitCode = await executeRun({
      inputDir: SAMPLES_DIR,
      flags: { ...flags, out, emulator: true },
      epilogue: (_result, outDir) => {
        const rel = relative(process.cwd(), outDir) || '.';
        return [
          `open ${join(rel, REPORT_HTML_FILE)} in a browser to see every input next to its outputs`,
          `outputs: ${rel}/<input path>/ (output-<i>.<ext>, layer-<index>.png, composite.png, result.json; a chain's steps in <input path>/<step>/)`,
          `try your own folder: genpipe run <folder> --out <out-dir> --emulator (recipe: ${relative(process.cwd(), join(SAMPLES_DIR, 'genpipe.yaml'))})`,
        ];
      },
    });
  });
}
