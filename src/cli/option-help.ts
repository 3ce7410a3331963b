/**
 * How an option describes itself, in `--help` and in the generated docs/commands pages alike
 * (scripts/docs.ts): commander's text (the description, then its choices and default), after
 * "required:" for an option a command cannot run without — one commander enforces (requiredOption),
 * or one the command checks itself with its own message (requiredByCommand).
 */
import { type Command, Help, type Option } from 'commander';

const checkedByCommand = new WeakSet<Option>();

/** Marks an option the command requires but checks itself (a usage error of its own, exit 2). */
export function requiredByCommand(option: Option): Option {
  checkedByCommand.add(option);
  return option;
}

/** Whether a command cannot run without the option. */
export function isRequired(option: Option): boolean {
  return option.mandatory || checkedByCommand.has(option);
}

/** An option's text as `--help` shows it. */
export function optionHelpText(option: Option): string {
  const text = new Help().optionDescription(option);
  return isRequired(option) ? `required: ${text}` : text;
}

/** Makes `--help` of the program and of every command added to it after this call use optionHelpText. */
export function configureOptionHelp(program: Command): void {
  program.configureHelp({ optionDescription: optionHelpText });
}
