/** Deterministic seeds for rendered content: the same inputs always give the same pixels. */
import { createHash } from 'node:crypto';
import { Rng } from '../rng.ts';

/** A seeded random source derived from a SHA-256 of the parts (e.g. kind, model, aspect ratio, prompt). */
export function rngFor(...parts: readonly string[]): Rng {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  return new Rng(digest.readUInt32LE(0) ^ digest.readUInt32LE(4));
}

/** An integer in [0, n) drawn from `rng`. */
export function pick(rng: Rng, n: number): number {
  return Math.min(n - 1, Math.floor(rng.next() * n));
}
