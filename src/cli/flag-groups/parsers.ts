/**
 * The parse step of the flags' values, for commander: a value that is not one the flag takes is a usage
 * error (exit 2) naming the flag and the range, before anything is sent. Light: commander only.
 */
import { InvalidArgumentError } from 'commander';

/** Parses a whole number of at least `min` for commander (a bad value is a usage error, exit 2). */
export function intArg(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    // Digits, or a whole number in exponent form (1e6).
    if (!/^\d+(\.\d+)?(e\+?\d+)?$/i.test(value.trim()) || !Number.isSafeInteger(n) || n < min) {
      throw new InvalidArgumentError(`expected a whole number of at least ${min}`);
    }
    return n;
  };
}

/** The longest span a seconds flag takes by default: the longest timer Node has (about 24.8 days). */
export const MAX_FLAG_SECONDS = 2_147_483;

/** Parses a number of seconds of at least `min` and at most `max` for commander. */
export function secondsArg(min: number, max: number = MAX_FLAG_SECONDS): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`expected a number of seconds of at least ${min} and at most ${max}`);
    }
    return n;
  };
}

/** Parses a number of seconds greater than 0 and at most `max` for commander. */
export function positiveSeconds(max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || n > max) {
      throw new InvalidArgumentError(`expected a number of seconds greater than 0 and at most ${max}`);
    }
    return n;
  };
}

/** A port number (0: a free port), as --metrics-port takes it. */
export function portArg(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 65_535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535 (0: a free port)');
  }
  return n;
}

/** A repeatable flag's values, in the order given. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
