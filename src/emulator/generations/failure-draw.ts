/** The seeded fault draw that decides whether a generation fails with an injected failure_code. */
import { FAILURE_CODE_NAMES, type FailureCode } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';

/**
 * One draw per generation from `config.faults.failure_codes` (probabilities, in the fixed order of
 * FAILURE_CODE_NAMES). Draws nothing when no code has a probability, so an unused fault never
 * shifts the seeded sequence. The same seed and the same requests give the same outcomes.
 */
export function drawFailure(ctx: EmulatorContext): FailureCode | null {
  const weights = ctx.config.faults.failure_codes;
  const codes = FAILURE_CODE_NAMES.filter((c) => (weights[c] ?? 0) > 0);
  if (codes.length === 0) return null;
  const r = ctx.rng.next();
  let acc = 0;
  for (const code of codes) {
    acc += weights[code] ?? 0;
    if (r < acc) return code;
  }
  return null;
}
