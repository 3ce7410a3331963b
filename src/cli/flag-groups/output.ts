/** The output and progress flags: what a command prints, where, and how much. */
import { Option } from 'commander';
import { FlagGroup } from './group.ts';

/** What --json, --quiet and --verbose do on a command whose output is not one result (a batch's events). */
export interface OutputHelp {
  json?: string;
  quiet?: string;
  verbose?: string;
}

/**
 * --json, --quiet, -v / --verbose and --log-file, with the words of the command's output where it is not
 * one result (a single command takes `.only('--json', '--quiet')`).
 */
export function outputGroup(help: OutputHelp = {}): FlagGroup {
  return new FlagGroup('Output and progress flags:', [
    () =>
      new Option(
        '--json',
        help.json ?? 'print machine-readable JSON on stdout (errors as one JSON line on stderr)',
      ),
    () => new Option('-q, --quiet', help.quiet ?? 'no notes or progress on stderr'),
    () => new Option('-v, --verbose', help.verbose ?? 'a line for every stage each file reaches'),
    () =>
      new Option(
        '--log-file <path>',
        'append a record of the run there: every stage of every file with ISO times (as -v, whatever stdout shows), the options, notes such as retries, and the closing summary; secrets masked',
      ),
  ]);
}
