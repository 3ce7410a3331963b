/**
 * The field checks every legacy request shape is validated with: a shape is an ordered list of field
 * rules, checked in the interface's field order after the unknown-field check; the first failure
 * answers, in the sharp-style wording of the agents surface (`Expected <what> for <path> but received
 * <value>`). Pure: no I/O.
 */
import { expectedDetail, oneOf, unknownFieldDetail } from './details.ts';

export type Json = Record<string, unknown>;

/** Legacy Media: an object with a required `url` (an absolute http or https URI). */
export interface LegacyMedia {
  url: string;
}

/** One field of a shape: its name, whether it must be present, and the check of a present value. */
export interface FieldRule {
  name: string;
  required?: boolean;
  /** A detail for the first problem of the value at `path`, or null. */
  check: (value: unknown, path: string) => string | null;
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isHttpUri(value: unknown): value is string {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === 'http:' || protocol === 'https:';
}

/** Field check: an absolute http(s) URI. */
export function uriCheck(value: unknown, path: string): string | null {
  return isHttpUri(value) ? null : expectedDetail('http(s) URL', path, value);
}

/** Field check: one of `values`. */
export function enumCheck(values: readonly string[]): FieldRule['check'] {
  return (value, path) =>
    typeof value === 'string' && values.includes(value) ? null : expectedDetail(oneOf(values), path, value);
}

export function stringCheck(value: unknown, path: string): string | null {
  return typeof value === 'string' ? null : expectedDetail('string', path, value);
}

export function booleanCheck(value: unknown, path: string): string | null {
  return typeof value === 'boolean' ? null : expectedDetail('boolean', path, value);
}

export function numberCheck(value: unknown, path: string): string | null {
  return typeof value === 'number' && Number.isFinite(value) ? null : expectedDetail('number', path, value);
}

/** Field check: an integer of at least 0 (the reframe geometry fields). */
export function nonNegativeIntegerCheck(value: unknown, path: string): string | null {
  return Number.isInteger(value) && (value as number) >= 0
    ? null
    : expectedDetail('integer of at least 0', path, value);
}

/** Field check: an object with exactly the given rules' fields. */
export function objectCheck(rules: readonly FieldRule[]): FieldRule['check'] {
  return (value, path) => shapeProblem(value, rules, path);
}

/** Field check: an array whose every item passes `item`. */
export function arrayCheck(item: FieldRule['check']): FieldRule['check'] {
  return (value, path) => {
    if (!Array.isArray(value)) return expectedDetail('array', path, value);
    for (let i = 0; i < value.length; i++) {
      const problem = item(value[i], `${path}[${i}]`);
      if (problem) return problem;
    }
    return null;
  };
}

/** Media `{ url }`. */
export const mediaCheck = objectCheck([{ name: 'url', required: true, check: uriCheck }]);

/** `{ url, weight }` of image_ref, style_ref and modify_image_ref. */
export const weightedRefCheck = objectCheck([
  { name: 'url', required: true, check: uriCheck },
  { name: 'weight', check: numberCheck },
]);

/**
 * The first problem of `body` against an ordered shape, or null: not an object, an unknown field,
 * then each field in order (missing when required, else its own check).
 * @param path - the object's path in details ('' at the top: fields are named bare)
 */
export function shapeProblem(body: unknown, rules: readonly FieldRule[], path = ''): string | null {
  if (!isObject(body)) return expectedDetail('object', path || 'request body', body);
  const at = (name: string) => (path ? `${path}.${name}` : name);
  const unknown = Object.keys(body).find((k) => !rules.some((r) => r.name === k));
  if (unknown !== undefined) return unknownFieldDetail(at(unknown));
  for (const rule of rules) {
    const value = body[rule.name];
    if (value === undefined) {
      if (rule.required) return expectedDetail(requiredWhat(rule), at(rule.name), value);
      continue;
    }
    const problem = rule.check(value, at(rule.name));
    if (problem) return problem;
  }
  return null;
}

/** What a missing required field should have been, for its detail. */
function requiredWhat(rule: FieldRule): string {
  // The check of a missing value names what it expects: reuse its own words.
  const detail = rule.check(undefined, rule.name);
  const m = detail ? /^Expected (.*) for /.exec(detail) : null;
  return m?.[1] ?? 'a value';
}
