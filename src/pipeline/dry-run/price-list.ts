/**
 * What a dry run prices its generations with: a price list, `{ <generation type>: <credits per
 * generation> }`, read from a YAML or JSON file (`--price-list`), or the costs an emulator is configured
 * with. Every problem of the file is named at once, each as `<file>:<line>: <type>: <message>`, as a
 * recipe's are.
 */
import { readFile } from 'node:fs/promises';
import { isMap, isPair, isScalar } from 'yaml';
import { GENERATION_TYPES, type GenerationType } from '../../spec/index.ts';
import { formatProblem, type RecipeProblem } from '../recipe-error.ts';
import { parseYaml } from '../recipe-yaml.ts';

/** Credits per generation of each type the list names (a type it does not name has no price). */
export type PriceList = Partial<Record<GenerationType, number>>;

/** A price list that cannot be used, with every problem found (one per line of the message). */
export class PriceListError extends Error {
  override name = 'PriceListError';
  readonly code = 'PRICE_LIST_INVALID';
  /** The message's lines: the problem alone, or a head line and one line per problem. */
  readonly lines: readonly string[];
  constructor(problems: readonly RecipeProblem[]) {
    const each = problems.map(formatProblem);
    const lines = each.length === 1 ? each : [`the price list has ${each.length} problems:`, ...each];
    super(lines.join('\n'));
    this.lines = lines;
  }
}

const SHAPE = `{ <generation type>: <credits per generation>, … } (types: ${GENERATION_TYPES.join(', ')})`;

/** What is wrong with one price, or null. */
function priceProblem(value: unknown): string | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    return `Expected a number of credits of at least 0 but received ${JSON.stringify(value) ?? String(value)}`;
  }
  return null;
}

/** What is wrong with one type name, or null. */
function typeProblem(type: string): string | null {
  return (GENERATION_TYPES as readonly string[]).includes(type)
    ? null
    : `not a generation type (types: ${GENERATION_TYPES.join(', ')})`;
}

/**
 * A price list from the text of a YAML or JSON file (JSON is YAML).
 *
 * @param file - the file as the user named it, for the problems' texts
 * @throws PriceListError naming the file, the line and the type of each problem
 * @example parsePriceList('image: 1\nvideo: 10\n', 'prices.yaml') // { image: 1, video: 10 }
 */
export function parsePriceList(text: string, file: string): PriceList {
  const parsed = parseYaml(text);
  const problems: RecipeProblem[] = parsed.errors.map((e) => ({
    file,
    line: e.line,
    path: null,
    message: e.message,
  }));
  if (problems.length > 0) throw new PriceListError(problems);
  const root = parsed.doc.contents;
  if (!isMap(root)) {
    throw new PriceListError([{ file, line: null, path: null, message: `must be ${SHAPE}` }]);
  }
  const prices: PriceList = {};
  for (const pair of root.items) {
    if (!isPair(pair) || !isScalar(pair.key)) continue;
    const type = String(pair.key.value);
    const range = (pair.key as { range?: [number, number, number] }).range;
    const line = range ? parsed.lines.linePos(range[0]).line : null;
    const value = isScalar(pair.value) ? pair.value.value : pair.value?.toJSON?.();
    const problem = typeProblem(type) ?? priceProblem(value);
    if (problem !== null) problems.push({ file, line, path: type, message: problem });
    else prices[type as GenerationType] = value as number;
  }
  if (problems.length > 0) throw new PriceListError(problems);
  if (Object.keys(prices).length === 0) {
    throw new PriceListError([
      { file, line: null, path: null, message: `names no price: it must be ${SHAPE}` },
    ]);
  }
  return prices;
}

/**
 * The price list in `path` (YAML or JSON).
 *
 * @param shownAs - the path as the user gave it, for the problems' texts
 * @throws PriceListError when the file cannot be read or is not a price list
 */
export async function loadPriceList(path: string, shownAs = path): Promise<PriceList> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'a folder, not a file'
          : code === 'EACCES'
            ? 'permission denied'
            : String((err as Error).message);
    throw new PriceListError([{ file: shownAs, line: null, path: null, message: `cannot be read: ${why}` }]);
  }
  return parsePriceList(text, shownAs);
}

/**
 * The costs an emulator answered (`GET /_emulator/costs`) as a price list, or null when the answer is
 * not one (a service that is not genpipe's emulator).
 *
 * @example pricesOfAnswer({ image: 1, video: 10 }) // { image: 1, video: 10 }
 */
export function pricesOfAnswer(body: unknown): PriceList | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const prices: PriceList = {};
  for (const [type, value] of Object.entries(body)) {
    if (typeProblem(type) !== null || priceProblem(value) !== null) return null;
    prices[type as GenerationType] = value as number;
  }
  return Object.keys(prices).length > 0 ? prices : null;
}

/** What generations cost at a price list: the credits of those whose type it names, and the others. */
export interface Priced {
  credits: number;
  /** Generations of a type the list does not name, by type (not in `credits`). */
  unpriced: Partial<Record<GenerationType, number>>;
}

/**
 * The price of `generations` (counts by type) at `prices`: what a dry run estimates and what a
 * dashboard counts as spent and still to spend, one sum.
 *
 * @example priceOf({ image: 1, video: 10 }, { image: 3, video: 1 }) // { credits: 13, unpriced: {} }
 */
export function priceOf(prices: PriceList, generations: Partial<Record<GenerationType, number>>): Priced {
  const unpriced: Partial<Record<GenerationType, number>> = {};
  let sum = 0;
  for (const [type, n] of Object.entries(generations) as Array<[GenerationType, number]>) {
    const price = prices[type];
    if (price === undefined) unpriced[type] = n;
    else sum += price * n;
  }
  // Binary noise (0.1 + 0.2) rounded away.
  return { credits: Number(sum.toFixed(6)), unpriced };
}
