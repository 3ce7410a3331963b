/**
 * The mechanism of flag groups: flags that belong together (connection, batch selection, polling and
 * pacing, journal and store, output and progress, metrics) are declared once, in the group's module,
 * each with its help text and its parse step; a command lists the groups it takes (addFlagGroups), and
 * `--help` shows its flags under the groups' headings (commander's Option.helpGroup), after the
 * command's own. A flag has one meaning wherever it is taken: a command that takes only some flags of
 * a group takes them as declared (FlagGroup.only), never a copy with other words.
 */
import type { Command, Option } from 'commander';

/** One flag of a group: its Option, made afresh for each command that takes it. */
export type FlagDefinition = () => Option;

/** Flags that belong together: a heading in `--help` and their definitions, in the order shown. */
export class FlagGroup {
  constructor(
    /** As `--help` shows it: `Polling and pacing flags:`. */
    readonly heading: string,
    private readonly definitions: readonly FlagDefinition[],
  ) {}

  /** The long forms of the group's flags (`--poll-interval`), in order. */
  flags(): string[] {
    return this.definitions.map((d) => longOf(d()));
  }

  /**
   * The group with only the flags named (long forms), as declared: a command that takes part of it.
   *
   * @throws Error naming a flag the group does not declare (a mistake in a command's definition)
   */
  only(...flags: string[]): FlagGroup {
    const known = this.flags();
    const unknown = flags.filter((f) => !known.includes(f));
    if (unknown.length > 0) throw new Error(`${this.heading} declares no ${unknown.join(', ')}`);
    return new FlagGroup(
      this.heading,
      this.definitions.filter((d) => flags.includes(longOf(d()))),
    );
  }

  /** The group's options for one command, under its heading. */
  options(): Option[] {
    return this.definitions.map((d) => d().helpGroup(this.heading));
  }
}

function longOf(option: Option): string {
  return option.long ?? option.flags;
}

/** Adds the flags of `groups` to a command, group by group, in the order given. */
export function addFlagGroups(cmd: Command, groups: readonly FlagGroup[]): Command {
  for (const group of groups) for (const option of group.options()) cmd.addOption(option);
  return cmd;
}
