/**
 * `genpipe generations get|wait|download`: reading, waiting for and downloading generations of the
 * agents surface. Also the helpers `genpipe generate` shares: describing a generation, waiting with
 * state notes, the JSON of saved outputs. Outputs are saved through generation-out.ts.
 */
import type { Command } from 'commander';
import { GenpipeError } from '../../client/errors.ts';
import type { Generation } from '../../client/index.ts';
import { AGAINST_SERVE, addExamples, type Examples } from '../command-examples.ts';
import {
  addPollOption,
  addServiceOptions,
  type ClientFlags,
  checkTimeoutWaits,
  idArg,
  secondsArg,
} from '../command-flags.ts';
import { type SavedOutput, saveGenerationOutputs } from '../generation-out.ts';
import type { CommandContext } from '../make-client.ts';
import { checkOutDir } from '../out-dir-check.ts';
import { runWithClient } from '../run-with-client.ts';

/** The lines describing a generation, for people. */
export function generationLines(g: Generation, requestId?: string): string[] {
  const lines = [`generation ${g.id}  ${g.state}`];
  lines.push(`  type: ${g.type}   model: ${g.model}   created: ${g.created_at}`);
  if (requestId) lines.push(`  request id: ${requestId}`);
  if (g.state === 'failed') {
    lines.push(`  failure_code: ${g.failure_code ?? '(none)'}`);
    lines.push(`  failure_reason: ${g.failure_reason ?? '(none)'}`);
  }
  g.output.forEach((o, i) => {
    const layer = o.layer ? ` layer ${o.layer.index} (${o.layer.alpha_hint}) ${o.layer.description}` : '';
    lines.push(`  output ${i}: ${o.type}${layer}`);
    lines.push(`    ${o.url}`);
  });
  return lines;
}

/**
 * The JSON of saved outputs (snake_case like the API); `replaced` when the file replaced one of the
 * same name, from an earlier download of the same generation.
 */
export function outputsJson(outputs: SavedOutput[]): Array<Record<string, unknown>> {
  return outputs.map((o) => ({
    index: o.index,
    path: o.path,
    name: o.name,
    bytes: o.bytes,
    mime_type: o.mimeType,
    type: o.type,
    layer: o.layer,
    replaced: o.replaced,
  }));
}

/**
 * Waits for a generation, noting each state change on stderr.
 * @throws GenerationFailedError (failure_code, failure_reason) when it failed; TimeoutError
 */
export function waitNoting(
  ctx: CommandContext,
  generation: string | Generation,
  timeoutMs: number | undefined,
): Promise<Generation> {
  return ctx.client.generations.wait(generation, {
    signal: ctx.signal,
    onUpdate: (g) => ctx.note(`generation ${g.id}: ${g.state}`),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
}

interface WaitFlags extends ClientFlags {
  timeout?: number;
}

interface DownloadFlags extends WaitFlags {
  out: string;
  wait?: boolean;
}

/** The refusal to download a generation still running when `--wait` was not given. */
function notCompletedText(g: Pick<Generation, 'id' | 'state'>): string {
  return `Generation ${g.id} has no outputs to download yet (state ${g.state}): pass --wait to wait for it to complete, then download`;
}

/** Seconds of `--timeout` as ms for waitNoting (undefined: no limit). */
function timeoutMs(flags: WaitFlags): number | undefined {
  return flags.timeout === undefined ? undefined : flags.timeout * 1000;
}

/** What the commands' `<id>` is. */
const GENERATION_ID = 'the generation id (a UUID)';

const GET_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a generation by its id (as `generate` printed it)',
      line: 'genpipe generations get <generation-id>',
    },
    { comment: 'the same as JSON', line: 'genpipe generations get <generation-id> --json' },
  ],
};

const WAIT_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'wait until it completes, 5 minutes at most',
      line: 'genpipe generations wait <generation-id> --timeout 300',
    },
    {
      comment: 'the generation as JSON once it ended',
      line: 'genpipe generations wait <generation-id> --json',
    },
  ],
};

const DOWNLOAD_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'the outputs of a completed generation into out/<generation-id>/',
      line: 'genpipe generations download <generation-id> --out out/',
    },
    {
      comment: 'one still running: wait for it first, 10 minutes at most',
      line: 'genpipe generations download <generation-id> --out out/ --wait --timeout 600',
    },
  ],
};

/** Registers `genpipe generations get|wait|download`. */
export function registerGenerations(program: Command): void {
  const generations = program
    .command('generations')
    .description('Show, wait for and download generations (agents surface)');

  addServiceOptions(
    addExamples(
      generations
        .command('get')
        .description('Show a generation')
        .argument('<id>', GENERATION_ID, idArg('generation')),
      GET_EXAMPLES,
    ),
  ).action((id: string, flags: ClientFlags) =>
    runWithClient(flags, async (ctx) => {
      const g = await ctx.client.generations.get(id, { signal: ctx.signal });
      ctx.result(g, () => generationLines(g));
    }),
  );

  addPollOption(
    addServiceOptions(
      addExamples(
        generations
          .command('wait')
          .description('Wait until a generation completes (exit 1 when it failed: failure_code and reason)')
          .argument('<id>', GENERATION_ID, idArg('generation'))
          .option(
            '--timeout <seconds>',
            'give up after this long (exit 1; default: no limit)',
            secondsArg(0),
          ),
        WAIT_EXAMPLES,
      ),
    ),
  ).action((id: string, flags: WaitFlags) =>
    runWithClient(flags, async (ctx) => {
      const g = await waitNoting(ctx, id, timeoutMs(flags));
      ctx.result(g, () => generationLines(g));
    }),
  );

  addPollOption(
    addServiceOptions(
      addExamples(
        generations
          .command('download')
          .description('Download the outputs of a completed generation; prints their paths')
          .argument('<id>', GENERATION_ID, idArg('generation'))
          .requiredOption('--out <dir>', 'save the outputs in <dir>/<generation id>/ (created when missing)')
          .option(
            '--wait',
            'when the generation is not completed yet, wait for it as `generations wait` does (exit 1 when it fails)',
          )
          .option(
            '--timeout <seconds>',
            'with --wait: give up after this long (exit 1; default: no limit)',
            secondsArg(0),
          ),
        DOWNLOAD_EXAMPLES,
      ),
    ),
  ).action((id: string, flags: DownloadFlags) =>
    runWithClient(flags, async (ctx) => {
      checkTimeoutWaits(flags, flags.wait === true, '--wait');
      await checkOutDir(flags.out);
      let g = await ctx.client.generations.get(id, { signal: ctx.signal });
      if (g.state !== 'completed') {
        // A failed one is waited on too: the wait ends at once with the failure, as `generations wait` does.
        if (flags.wait) g = await waitNoting(ctx, g, timeoutMs(flags));
        else if (g.state !== 'failed') throw new GenpipeError(notCompletedText(g));
      }
      const outputs = await saveGenerationOutputs(ctx, g, flags.out, (dir, o) =>
        ctx.client.generations.download(g, dir, o),
      );
      ctx.result({ id, outputs: outputsJson(outputs) }, () => outputs.map((o) => o.path));
    }),
  );
}
