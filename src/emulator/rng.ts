/** A small seeded random source (mulberry32): the same seed gives the same sequence of draws. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }
  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** True with probability p. Draws nothing when p is 0, so unused faults never shift the sequence. */
  chance(p: number): boolean {
    if (p <= 0) return false;
    return this.next() < p;
  }
  /** A number in [lo, hi]. */
  between(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }
}
