/** Whole-word matching of prompts: blocked words (content moderation) and the layers request word. */

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Whether `text` contains `word` as a whole word, case-insensitively (letters, digits and `_` count as
 * word characters in any script).
 * @example containsWord('Split into Layers, please', 'layers') // true
 * @example containsWord('multilayers', 'layers') // false
 */
export function containsWord(text: string, word: string): boolean {
  if (word.length === 0) return false;
  const re = new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(word)}(?![\\p{L}\\p{N}_])`, 'iu');
  return re.test(text);
}

/** The first blocked word found in the prompt, or null. */
export function blockedWordIn(prompt: string | undefined, blocked: readonly string[]): string | null {
  if (!prompt) return null;
  return blocked.find((w) => containsWord(prompt, w)) ?? null;
}
