/** The batch selection flags: which files of the input folder a batch takes. */
import { Option } from 'commander';
import { FlagGroup } from './group.ts';
import { collect, intArg } from './parsers.ts';

/** --include, --exclude, --max-files (run). */
export const SELECTION = new FlagGroup('Batch selection flags:', [
  () =>
    new Option(
      '--include <glob>',
      "take only the files this glob matches on their path relative to the input dir, in the recipe's glob dialect (repeatable: any of them)",
    ).argParser(collect),
  () =>
    new Option(
      '--exclude <glob>',
      'leave out the files this glob matches (repeatable; wins over --include); they are listed as ignored',
    ).argParser(collect),
  () =>
    new Option(
      '--max-files <n>',
      'take the first n files in discovery order (by name, folder by folder); the rest are listed as ignored',
    ).argParser(intArg(1)),
]);
