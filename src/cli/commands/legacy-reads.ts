/** `genpipe legacy list`, `delete <id>`, `concepts` and `credits`: the legacy surface's reads and housekeeping. */
import type { Command } from 'commander';
import { LEGACY_OPERATION_CHOICES } from '../../spec/index.ts';
import { AGAINST_SERVE, addExamples, type Examples } from '../command-examples.ts';
import { addServiceOptions, type ClientFlags, idArg, intArg } from '../command-flags.ts';
import { runWithClient } from '../run-with-client.ts';

interface ListFlags extends ClientFlags {
  limit?: number;
  offset?: number;
}

const LIST_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    { comment: 'your 10 newest legacy generations', line: 'genpipe legacy list' },
    { comment: 'the next 20, as JSON', line: 'genpipe legacy list --limit 20 --offset 10 --json' },
  ],
};

const DELETE_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a legacy generation and its outputs, by its id',
      line: 'genpipe legacy delete <generation-id>',
    },
    { comment: 'the same, the answer as JSON', line: 'genpipe legacy delete <generation-id> --json' },
  ],
};

const READ_EXAMPLES = (name: string, what: string): Examples => ({
  setup: AGAINST_SERVE,
  examples: [
    { comment: what, line: `genpipe legacy ${name}` },
    { comment: 'the same as JSON', line: `genpipe legacy ${name} --json` },
  ],
});

/** Registers `genpipe legacy list`, `delete`, `concepts` and `credits`. */
export function registerLegacyReads(legacy: Command): void {
  const max = LEGACY_OPERATION_CHOICES.listMaxLimit;
  const list = legacy
    .command('list')
    .description('List your legacy generations, newest first (one page)')
    .option(
      '--limit <n>',
      `how many (1 to ${max}, default ${LEGACY_OPERATION_CHOICES.listDefaultLimit})`,
      intArg(1),
    )
    .option('--offset <n>', 'skip this many of the newest (default 0)', intArg(0));
  addServiceOptions(addExamples(list, LIST_EXAMPLES)).action((flags: ListFlags) =>
    runWithClient(flags, async (ctx) => {
      const page = await ctx.client.legacy.list({
        signal: ctx.signal,
        ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
        ...(flags.offset !== undefined ? { offset: flags.offset } : {}),
      });
      ctx.result(page, () => [
        ...page.generations.map((g) => `${g.id}  ${g.generation_type}  ${g.state}  ${g.created_at}`),
        ...(page.has_more ? [`(more: --offset ${page.offset + page.count})`] : []),
      ]);
    }),
  );

  const del = legacy
    .command('delete')
    .description('Delete a legacy generation and its outputs')
    .argument('<id>', 'the generation id (a UUID)', idArg('generation'));
  addServiceOptions(addExamples(del, DELETE_EXAMPLES)).action((id: string, flags: ClientFlags) =>
    runWithClient(flags, async (ctx) => {
      await ctx.client.legacy.delete(id, { signal: ctx.signal });
      ctx.result({ id, deleted: true }, () => [`deleted legacy generation ${id}`]);
    }),
  );

  const concepts = legacy
    .command('concepts')
    .description('List the camera concepts generate-video --concept takes');
  addServiceOptions(addExamples(concepts, READ_EXAMPLES('concepts', 'the concept keys, one a line'))).action(
    (flags: ClientFlags) =>
      runWithClient(flags, async (ctx) => {
        const keys = await ctx.client.legacy.concepts({ signal: ctx.signal });
        ctx.result(keys, () => keys);
      }),
  );

  const credits = legacy.command('credits').description('Show your credit balance (US cents)');
  addServiceOptions(addExamples(credits, READ_EXAMPLES('credits', 'your balance'))).action(
    (flags: ClientFlags) =>
      runWithClient(flags, async (ctx) => {
        const c = await ctx.client.legacy.credits({ signal: ctx.signal });
        ctx.result(c, () => [`credit balance: ${c.credit_balance} (US cents)`]);
      }),
  );
}
