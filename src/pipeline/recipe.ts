/**
 * The recipe of a batch: which files to process and how. A YAML file
 *
 * ```yaml
 * rules:                                  # the first rule whose glob matches a file wins
 *   - match: "**\/*.{jpg,jpeg,png,webp}"   # glob on the path relative to the input dir (case-insensitive)
 *     input_as: source                     # source | start_frame | end_frame | image_ref | prompt
 *     request: { type: image_edit, model: uni-1, prompt: "watercolor", image_ref: [{ ref: style }] }
 *     upload: base64                       # optional: auto (default) | inline | presigned | base64
 * references:                              # files uploaded once per batch, shared by every request
 *   style: refs/style.png                  # path relative to the recipe file's folder
 * ```
 *
 * loaded and validated up front: every problem is reported at once as `<file>:<line>: <field path>:
 * <message>` in a RecipeError (exit code 2). A rule's request is validated with src/spec with the file
 * and references in place, so a rule the service could never accept stops the batch before any upload.
 */
import { lstat, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import picomatch from 'picomatch';
import {
  type ImageHeader,
  isMediaError,
  probeVideo,
  readImageHeader,
  readImageSize,
  sniffFile,
  type VideoProbe,
  verifyImage,
} from '../media/index.ts';
import { checkImageFacts, describeValue, LIMITS, type MediaFacts, withValidModels } from '../spec/index.ts';
import type { InputAs } from './item.ts';
import { EMULATOR_MEDIA_URL, mediaUrlProblem } from './legacy-media-url.ts';
import {
  isLegacyRequest,
  legacyInputAsOf,
  legacyInputAsProblem,
  legacyOperationOf,
  legacyProblem,
  namesSurface,
} from './legacy-request.ts';
import { MEDIA_CHECK_REASONS } from './media-check.ts';
import { type RecipeStep, readSteps } from './recipe-chain.ts';
import { RecipeError, type RecipeProblem } from './recipe-error.ts';
import {
  defaultInputAs,
  fieldOfDetail,
  getAt,
  INPUT_AS_VALUES,
  inputSitePath,
  isObject,
  type Json,
  kindForPosition,
  occupiedBy,
  type PlaceholderFacts,
  placeInput,
  REF_FILE_ID_PREFIX,
  REFERENCE_NAME_RE,
  type ReferenceKind,
  requestType,
  resolveReferences,
  standInUnresolved,
  validatePlanned,
  withoutField,
} from './recipe-request.ts';
import { type FieldPath, formatPath, lineAt, type ParsedYaml, parsePath, parseYaml } from './recipe-yaml.ts';
import { utf8Text } from './utf8-text.ts';

export { isRecipeError, RecipeError, type RecipeProblem } from './recipe-error.ts';

/** The recipe file looked for in the input dir when no --recipe is given. */
export const RECIPE_FILE_NAME = 'genpipe.yaml';
/** Largest recipe file read. */
export const RECIPE_MAX_BYTES = 1024 * 1024;

/** One rule of a recipe. */
export interface RecipeRule {
  /** 0-based position in `rules` (the first match wins). */
  index: number;
  /** The glob as written (a leading `./` dropped), matched case-insensitively on the relative path. */
  match: string;
  /**
   * Where the file goes; null when the rule does not say: then a text file is the prompt and media go
   * where the request's type puts them (see defaultInputAs).
   */
  inputAs: InputAs | null;
  /**
   * How the file's own media is uploaded (rule key `upload`, default `auto`): `auto` lets the client
   * choose inline multipart up to its threshold and presigned above; `inline` and `presigned` force
   * one; `base64` sends a small image inline in the request as base64 `data` (no file upload; larger
   * files and videos fall back to `auto`).
   */
  upload: UploadPreference;
  /**
   * How the file reaches a legacy operation that takes media (rule key `media_url`): a URL template
   * with `{path}`, or `emulator` (legacy-media-url.ts); null when the rule does not say.
   */
  mediaUrl: string | null;
  /**
   * The request as written, with `{ ref: <name> }` replaced by `{ file_id: '$ref:<name>' }`; for a chain
   * rule, the request of its first step as written (the one the file goes into).
   */
  request: Json;
  /**
   * A chain rule's steps (recipe-chain.ts), parents before dependants; null for a single-request rule.
   * The file goes into the first step as written (`index` 0), at `input_as`.
   */
  steps: RecipeStep[] | null;
  /** Line of the rule in the recipe file. */
  line: number;
}

/** A shared reference: a file uploaded once per batch and referenced by file_id in every request. */
export interface RecipeReference extends ReferenceKind {
  name: string;
  /** The path as written in the recipe. */
  path: string;
  /** Absolute real path of the file. */
  absPath: string;
  bytes: number;
  width?: number;
  height?: number;
  durationSeconds?: number;
}

export interface Recipe {
  /** Absolute real path of the recipe file. */
  file: string;
  /** The recipe file as the user named it, for messages. */
  display: string;
  /** Folder the references are relative to. */
  dir: string;
  rules: RecipeRule[];
  references: Record<string, RecipeReference>;
}

export interface LoadRecipeOptions {
  /** The batch's input dir; its `genpipe.yaml` is used when `recipePath` is not given. */
  inputDir: string;
  /** The --recipe file, when given. */
  recipePath?: string;
}

const TOP_KEYS = ['rules', 'references'] as const;
const RULE_KEYS = ['match', 'input_as', 'request', 'steps', 'upload', 'media_url'] as const;

/** Values of a rule's `upload` key (see RecipeRule.upload). */
export const UPLOAD_PREFERENCES = ['auto', 'inline', 'presigned', 'base64'] as const;
export type UploadPreference = (typeof UPLOAD_PREFERENCES)[number];

// ---- loading -----------------------------------------------------------------------------------

/**
 * Loads the batch's recipe: the `recipePath` file when given, else `genpipe.yaml` in the input dir.
 * Without either there is no default recipe: sending a whole folder to a paid service with rules the
 * user never wrote is not a careful default, so this is a RecipeError that says how to give one.
 *
 * @throws RecipeError listing every problem (exit code 2)
 * @example const recipe = await loadRecipe({ inputDir: 'photos', recipePath: 'watercolor.yaml' });
 */
export async function loadRecipe(opts: LoadRecipeOptions): Promise<Recipe> {
  if (opts.recipePath !== undefined) return readRecipe(opts.recipePath);
  const display = join(opts.inputDir, RECIPE_FILE_NAME);
  const found = await stat(display).then(
    () => true,
    () => false,
  );
  if (!found) {
    throw new RecipeError([
      {
        file: display,
        line: null,
        path: null,
        message: `no recipe: pass --recipe FILE, or put a ${RECIPE_FILE_NAME} in the input dir`,
      },
    ]);
  }
  // Found in the input folder (which others may write to): its references stay inside that folder.
  return readRecipe(display, { confineTo: opts.inputDir });
}

/**
 * Reads and validates the recipe file at `file` (named in messages as written).
 *
 * @param opts.confineTo - a folder its references must be inside (a recipe found in the input folder)
 * @throws RecipeError listing every problem
 */
export async function readRecipe(file: string, opts: { confineTo?: string } = {}): Promise<Recipe> {
  const abs = resolve(file);
  const whole = (message: string) => new RecipeError([{ file, line: null, path: null, message }]);
  const st = await stat(abs).catch(() => null);
  if (!st) throw whole('cannot read the recipe: file not found');
  if (!st.isFile()) throw whole('cannot read the recipe: not a regular file');
  if (st.size > RECIPE_MAX_BYTES) {
    throw whole(`the recipe is too large (${st.size} bytes; at most ${RECIPE_MAX_BYTES})`);
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(abs);
  } catch (err) {
    throw whole(`cannot read the recipe (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const decoded = utf8Text(bytes);
  if (!decoded.ok) throw whole(decoded.reason);
  const { text } = decoded;
  const confineTo = opts.confineTo === undefined ? {} : { confineTo: await realpath(opts.confineTo) };
  return parseRecipe(text, { file: await realpath(abs), display: file, dir: dirname(abs), ...confineTo });
}

/**
 * Parses and validates recipe text. References are read from disk (they must exist, be files, and be
 * images or videos that decode).
 *
 * @param text - the YAML text
 * @param where.file - absolute path of the recipe file
 * @param where.display - the file as messages name it
 * @param where.dir - folder the references are relative to
 * @param where.confineTo - the real path of a folder the references must be inside, when confined
 * @throws RecipeError listing every problem
 */
export async function parseRecipe(
  text: string,
  where: { file: string; display: string; dir: string; confineTo?: string },
): Promise<Recipe> {
  const parsed = parseYaml(text);
  const problems: RecipeProblem[] = [];
  const at = (path: FieldPath, message: string): void => {
    problems.push({
      file: where.display,
      line: lineAt(parsed, path),
      path: path.length > 0 ? formatPath(path) : null,
      message,
    });
  };
  if (parsed.errors.length > 0) {
    throw new RecipeError(
      parsed.errors.map((e) => ({ file: where.display, line: e.line, path: null, message: e.message })),
    );
  }
  let root: unknown;
  try {
    root = parsed.doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new RecipeError([
      { file: where.display, line: 1, path: null, message: err instanceof Error ? err.message : String(err) },
    ]);
  }
  if (!isObject(root)) {
    throw new RecipeError([
      {
        file: where.display,
        line: 1,
        path: null,
        message: `a recipe is a map with 'rules' (and optional 'references'), not ${describeValue(root ?? undefined)}`,
      },
    ]);
  }
  for (const key of Object.keys(root)) {
    if (!(TOP_KEYS as readonly string[]).includes(key)) {
      at([key], `unknown field (a recipe has ${TOP_KEYS.join(' and ')})`);
    }
  }
  const { references, unusable } = await readReferences(root.references, where, at);
  const rules = readRules(root.rules, { usable: references, unusable }, parsed, at);
  if (problems.length > 0) throw new RecipeError(problems);
  return { file: where.file, display: where.display, dir: where.dir, rules, references };
}

type At = (path: FieldPath, message: string) => void;

/** The references of a recipe: those it can use, and those it names but cannot use (with why). */
interface ReadReferences {
  references: Record<string, RecipeReference>;
  unusable: Record<string, string>;
}

/** The rules' view of the references: the usable ones, and why the others cannot be used. */
interface RuleReferences {
  usable: Record<string, RecipeReference>;
  unusable: Record<string, string>;
}

/** Where a recipe's references are looked for: relative to `dir`, and inside `confineTo` when set. */
interface ReferenceRoot {
  dir: string;
  confineTo?: string;
}

async function readReferences(value: unknown, root: ReferenceRoot, at: At): Promise<ReadReferences> {
  const out: ReadReferences = { references: {}, unusable: {} };
  if (value === undefined || value === null) return out;
  if (!isObject(value)) {
    at(['references'], `must be a map of name: path, not ${describeValue(value)}`);
    return out;
  }
  for (const [name, path] of Object.entries(value)) {
    const ref = await readNamedReference(name, path, root);
    if (typeof ref === 'string') {
      at(['references', name], ref);
      out.unusable[name] = ref;
    } else {
      out.references[name] = ref;
    }
  }
  return out;
}

/** The reference `name: path` of the recipe, or the problem with it. */
async function readNamedReference(
  name: string,
  path: unknown,
  root: ReferenceRoot,
): Promise<RecipeReference | string> {
  if (!REFERENCE_NAME_RE.test(name)) return 'a reference name is 1 to 64 letters, digits, _ or -';
  if (typeof path !== 'string' || path.trim() === '') {
    return `must be a file path (relative to the recipe's folder), not ${describeValue(path)}`;
  }
  const abs = isAbsolute(path) ? path : resolve(root.dir, path);
  if (root.confineTo !== undefined && !(await leadsInside(abs, root.confineTo))) {
    return `${path}: ${CONFINED_REFERENCE_TEXT}`;
  }
  return readReference(name, path, abs);
}

/**
 * The refusal of a reference outside the input folder by a recipe found there. It is the same whether
 * the file exists or not, so that a recipe dropped into a shared folder cannot tell which files exist.
 */
export const CONFINED_REFERENCE_TEXT =
  'a recipe in the input folder may only reference files inside the input folder ' +
  '(give a recipe that references other files with --recipe)';

/**
 * Whether `abs` leads inside the folder whose real path is `root`, links followed: the real path of
 * `abs`, or of its nearest existing folder with the rest of the path added. A link on the way that
 * leads nowhere does not lead inside (where it would lead is not known).
 */
async function leadsInside(abs: string, root: string): Promise<boolean> {
  let head = abs;
  const rest: string[] = [];
  for (;;) {
    const real = await realpath(head).catch(() => null);
    if (real !== null) {
      const rel = relative(root, join(real, ...rest));
      return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
    }
    if (
      await lstat(head).then(
        () => true,
        () => false,
      )
    )
      return false; // a link that leads nowhere
    const parent = dirname(head);
    if (parent === head) return false;
    rest.unshift(basename(head));
    head = parent;
  }
}

/** The reference at `abs` (`path` as written), or the problem with it. */
async function readReference(name: string, path: string, abs: string): Promise<RecipeReference | string> {
  const st = await stat(abs).catch(() => null);
  if (!st) return `${path}: file not found (paths are relative to the recipe's folder)`;
  if (!st.isFile()) return `${path}: not a regular file`;
  if (st.size === 0) return `${path}: file is empty`;
  const absPath = await realpath(abs);
  try {
    const sniff = await sniffFile(absPath);
    if (!sniff || (sniff.kind !== 'image' && sniff.kind !== 'video')) {
      return `${path}: a reference must be an image or a video${sniff ? `, not ${sniff.mime}` : ''}`;
    }
    const ref: RecipeReference = {
      name,
      path,
      absPath,
      kind: sniff.kind,
      mime: sniff.mime,
      bytes: st.size,
    };
    // An image whose header claims more than any position takes is not decoded: the rules that use it
    // refuse it with the service's text, at its position.
    const claimed = sniff.kind === 'image' ? await readImageSize(absPath) : null;
    if (claimed && checkImageFacts(path, { bytes: st.size, ...claimed }) !== null) {
      ref.width = claimed.width;
      ref.height = claimed.height;
    } else if (sniff.kind === 'image') {
      const header: ImageHeader = await readImageHeader(absPath);
      await verifyImage(absPath);
      ref.width = header.width;
      ref.height = header.height;
    } else {
      const probe: VideoProbe = await probeVideo(absPath);
      ref.width = probe.width;
      ref.height = probe.height;
      ref.durationSeconds = probe.durationSeconds;
    }
    return ref;
  } catch (err) {
    if (isMediaError(err) && err.code !== 'tool' && err.code !== 'aborted') return `${path}: ${err.message}`;
    throw err;
  }
}

/** Facts about the recipe's references, keyed by their placeholder (`$ref:<name>`). */
export function referenceFacts(recipe: Pick<Recipe, 'references'>): PlaceholderFacts {
  const out: Record<string, MediaFacts> = {};
  for (const ref of Object.values(recipe.references)) {
    const facts: MediaFacts = { bytes: ref.bytes, mime: ref.mime };
    if (ref.width !== undefined) facts.width = ref.width;
    if (ref.height !== undefined) facts.height = ref.height;
    if (ref.durationSeconds !== undefined) facts.durationSeconds = ref.durationSeconds;
    out[`${REF_FILE_ID_PREFIX}${ref.name}`] = facts;
  }
  return out;
}

function readRules(value: unknown, references: RuleReferences, parsed: ParsedYaml, at: At): RecipeRule[] {
  if (value === undefined || value === null) {
    at([], "missing 'rules': a recipe needs at least one rule");
    return [];
  }
  if (!Array.isArray(value)) {
    at(['rules'], `must be a list of rules, not ${describeValue(value)}`);
    return [];
  }
  if (value.length === 0) {
    at(['rules'], 'the list is empty: a recipe needs at least one rule');
    return [];
  }
  const rules: RecipeRule[] = [];
  value.forEach((raw, index) => {
    const rule = readRule(raw, index, references, parsed, at);
    if (rule) rules.push(rule);
  });
  return rules;
}

function readMatch(value: unknown, here: FieldPath, at: At): string | null {
  if (typeof value !== 'string' || value.trim() === '') {
    at(here, `must be a glob string such as "**/*.jpg", not ${describeValue(value)}`);
    return null;
  }
  const glob = value.startsWith('./') ? value.slice(2) : value;
  const problem = relativeGlobProblem(glob);
  if (problem !== null) {
    at(here, problem);
    return null;
  }
  return glob;
}

function readRule(
  raw: unknown,
  index: number,
  references: RuleReferences,
  parsed: ParsedYaml,
  at: At,
): RecipeRule | null {
  const here = ['rules', index];
  if (!isObject(raw)) {
    at(here, `a rule is a map with match, input_as and request, not ${describeValue(raw)}`);
    return null;
  }
  let sound = true;
  for (const key of Object.keys(raw)) {
    if (!(RULE_KEYS as readonly string[]).includes(key)) {
      at([...here, key], `unknown field (a rule has ${RULE_KEYS.join(', ')})`);
      sound = false;
    }
  }
  const match = readMatch(raw.match, [...here, 'match'], at);
  let inputAs: InputAs | null = null;
  let inputAsKnown = true;
  if (raw.input_as !== undefined) {
    if (typeof raw.input_as === 'string' && (INPUT_AS_VALUES as readonly string[]).includes(raw.input_as)) {
      inputAs = raw.input_as as InputAs;
    } else {
      at(
        [...here, 'input_as'],
        `must be one of ${INPUT_AS_VALUES.join(', ')}, not ${describeValue(raw.input_as)}`,
      );
      sound = false;
      inputAsKnown = false;
    }
  }
  let upload: UploadPreference = 'auto';
  if (raw.upload !== undefined) {
    if (typeof raw.upload === 'string' && (UPLOAD_PREFERENCES as readonly string[]).includes(raw.upload)) {
      upload = raw.upload as UploadPreference;
    } else {
      at(
        [...here, 'upload'],
        `must be one of ${UPLOAD_PREFERENCES.join(', ')}, not ${describeValue(raw.upload)}`,
      );
      sound = false;
    }
  }
  let mediaUrl: string | null = null;
  if (raw.media_url !== undefined && !(isObject(raw.request) && isLegacyRequest(raw.request))) {
    at([...here, 'media_url'], LEGACY_RULE_TEXTS.mediaUrlNotLegacy);
    sound = false;
  } else if (raw.media_url !== undefined) {
    const problem = mediaUrlProblem(raw.media_url);
    if (problem === null) mediaUrl = raw.media_url as string;
    else {
      at([...here, 'media_url'], problem);
      sound = false;
    }
  }
  if (raw.steps !== undefined)
    return readChainRule(raw, { index, match, inputAs, upload, mediaUrl, sound }, references, parsed, at);
  if (!isObject(raw.request)) {
    at([...here, 'request'], `must be a map of request fields, not ${describeValue(raw.request)}`);
    return null;
  }
  const request = structuredClone(raw.request);
  const refProblems = resolveReferences(request, references.usable, references.unusable);
  for (const p of refProblems) at([...here, 'request', ...p.path], p.message);
  const rule: RecipeRule = {
    index,
    match: match ?? '',
    inputAs,
    upload,
    mediaUrl,
    request,
    steps: null,
    line: lineAt(parsed, here),
  };
  if (match === null || !sound || refProblems.length > 0) {
    // Not usable, but its request is still checked, so that every problem is reported at once: the
    // references in question stand in as some reference, and the file's place goes unchecked when
    // input_as is not known.
    standInUnresolved(request);
    checkRuleRequest(rule, references.usable, at, {
      inputAsKnown,
      mediaUrlGiven: raw.media_url !== undefined,
    });
    return null;
  }
  checkRuleRequest(rule, references.usable, at);
  return rule;
}

/** A rule with `steps` (a chain): its steps read, then each step's request checked as the service would. */
function readChainRule(
  raw: Json,
  head: Pick<RecipeRule, 'index' | 'inputAs' | 'upload' | 'mediaUrl'> & {
    match: string | null;
    sound: boolean;
  },
  references: RuleReferences,
  parsed: ParsedYaml,
  at: At,
): RecipeRule | null {
  const here = ['rules', head.index];
  if (raw.request !== undefined) {
    at([...here, 'request'], "a rule has either 'request' (one generation) or 'steps' (a chain), not both");
    return null;
  }
  const read = readSteps(raw.steps, [...here, 'steps'], references, at);
  if (read === null) return null;
  const { steps } = read;
  const first = steps.find((s) => s.index === 0);
  const rule: RecipeRule = {
    index: head.index,
    match: head.match ?? '',
    inputAs: head.inputAs,
    upload: head.upload,
    mediaUrl: head.mediaUrl,
    request: first?.request ?? {},
    steps,
    line: lineAt(parsed, here),
  };
  // Every step's request is checked as the service would, also in a rule with other problems (their
  // places stand in), so that every problem is reported at once.
  const inputAsKnown = head.inputAs !== null || raw.input_as === undefined;
  let legacy = false;
  for (const step of steps.filter((st) => namesSurface(st.request))) {
    at([...here, 'steps', step.index, 'request', 'surface'], LEGACY_RULE_TEXTS.inChain);
    legacy = true;
  }
  if (legacy) return null;
  for (const step of steps) {
    checkRuleRequest(rule, references.usable, at, {
      step: { here: [...here, 'steps', step.index], request: step.request, takesInput: step.index === 0 },
      inputAsKnown,
    });
  }
  return read.sound && head.match !== null && head.sound ? rule : null;
}

/** The recipe's texts about rules that target the legacy surface. */
export const LEGACY_RULE_TEXTS = {
  inChain:
    "a chain's steps are generations of the agents surface: a request to the legacy surface is a rule of its own",
  mediaUrlNotLegacy: 'media_url is for legacy rules (request.surface: legacy)',
  noMediaUrl: `the legacy surface takes media by URL: give the rule media_url (a URL template such as https://cdn.example.com/{path}, or '${EMULATOR_MEDIA_URL}' against genpipe serve)`,
} as const;

/** How many of one request's problems are reported, each found once the one before is set aside. */
const REQUEST_PROBLEMS_PER_RULE = 8;

/** Which request of a rule checkRuleRequest checks, and whether the rule's input_as could be read. */
interface RuleRequestCheck {
  /** A chain's step: where it is, its request, and whether the input file enters there. */
  step?: { here: FieldPath; request: Json; takesInput: boolean };
  /** False when input_as was not understood: problems at the file's place are then not reported. */
  inputAsKnown?: boolean;
  /** True when the rule gives a media_url, sound or not (a bad one is reported where it is). */
  mediaUrlGiven?: boolean;
}

/**
 * Validates a rule's request with src/spec as the service would see it for a file that fits the rule:
 * the file at its `input_as` position, shared references with their real sizes, and a stand-in prompt
 * when the rule has none (each file's sidecar may bring its own; a file still without one fails alone).
 */
function checkRuleRequest(
  rule: RecipeRule,
  references: Record<string, RecipeReference>,
  at: At,
  check: RuleRequestCheck = {},
): void {
  const { step, inputAsKnown = true } = check;
  const here = step?.here ?? ['rules', rule.index];
  const request = step?.request ?? rule.request;
  if (isLegacyRequest(request) && legacyOperationOf(request) === null) {
    // Without an operation nothing else of a legacy request can be read: where the file goes, its fields.
    at([...here, 'request', 'operation'], legacyProblem(request) ?? 'unknown operation');
    return;
  }
  if (step && !step.takesInput) {
    checkPlaced(
      step.request.prompt === undefined ? { ...request, prompt: 'stand-in prompt' } : request,
      here,
      references,
      at,
    );
    return;
  }
  const type = requestType(request);
  const inputAs = rule.inputAs ?? legacyInputAsOf(request) ?? defaultInputAs(type);
  const inputWhere = rule.inputAs !== null ? ['rules', rule.index, 'input_as'] : here;
  const op = legacyOperationOf(request);
  const how =
    rule.inputAs !== null
      ? `input_as '${inputAs}' puts the file here`
      : `the file goes here (input_as defaults to '${inputAs}' for ${op === null ? `type '${type}'` : `operation '${op}'`})`;
  const legacyInput = legacyInputAsProblem(request, inputAs);
  if (legacyInput !== null) {
    if (inputAsKnown) at(inputWhere, legacyInput);
    return;
  }
  if (isLegacyRequest(request) && inputAs !== 'prompt' && rule.mediaUrl === null && !check.mediaUrlGiven) {
    at(['rules', rule.index], LEGACY_RULE_TEXTS.noMediaUrl);
  }
  const occupied = occupiedBy(inputAs, request);
  if (occupied !== null) {
    if (inputAsKnown)
      at(
        [...here, 'request', ...parsePath(occupied)],
        `${how}; remove this field or choose another input_as`,
      );
    return;
  }
  const kind = kindForPosition(inputAs, type);
  const placed = placeInput(request, inputAs, {
    kind,
    mime: kind === 'video' ? 'video/mp4' : 'image/png',
    prompt: 'stand-in prompt',
  });
  if (placed.prompt === undefined) placed.prompt = 'stand-in prompt';
  checkPlaced(placed, here, references, at, {
    site: inputSitePath(inputAs, request),
    inputAs,
    where: inputWhere,
    known: inputAsKnown,
  });
}

/**
 * Validates a request with its placeholders in place (src/spec, references with their real facts):
 * the service's detail at the field it names (at the rule's input_as when it is about the file's
 * position, unless input_as was not understood), and a shared reference of the wrong kind. The
 * service's rules give the first problem of a request; each one found is set aside (its field taken
 * out; for a type the model does not take, the model) and the request checked again, so that every
 * problem is reported at once.
 */
function checkPlaced(
  first: Json,
  here: FieldPath,
  references: Record<string, RecipeReference>,
  at: At,
  input?: { site: string; inputAs: InputAs; where: FieldPath; known: boolean },
): void {
  let placed = first;
  const reported = new Set<string>();
  for (let round = 0; round < REQUEST_PROBLEMS_PER_RULE; round++) {
    const result = validatePlanned(placed, referenceFacts({ references }));
    if (result.ok) {
      checkReferenceKinds(result.sites, here, references, at);
      return;
    }
    const field = fieldOfDetail(result.detail, placed);
    const key = field === null ? '' : formatPath(field);
    if (reported.has(key)) return;
    reported.add(key);
    const named = field === null ? undefined : getAt(placed, field);
    const detail = withReferenceSize(withValidModels(result.detail), result.status, named, references);
    if (input && field !== null && key.startsWith(input.site) && input.inputAs !== 'prompt') {
      if (input.known) at(input.where, detail);
      return;
    }
    at(field === null ? [...here, 'request'] : [...here, 'request', ...field], detail);
    const aside = field === null ? null : withoutField(placed, key === 'type' ? ['model'] : field);
    if (aside === null) return;
    placed = aside;
  }
}

/** A 413 of a shared reference over the byte limit, with the reference's size (as a file's check says it). */
function withReferenceSize(
  detail: string,
  status: number,
  named: unknown,
  references: Record<string, RecipeReference>,
): string {
  const id = isObject(named) ? named.file_id : undefined;
  if (status !== 413 || typeof id !== 'string' || !id.startsWith(REF_FILE_ID_PREFIX)) return detail;
  const ref = references[id.slice(REF_FILE_ID_PREFIX.length)];
  if (!ref || ref.bytes <= LIMITS.imageMaxBytes) return detail;
  return MEDIA_CHECK_REASONS.overSize(detail, ref.bytes, LIMITS.imageMaxBytes);
}

/** A shared reference of the wrong kind (an image where a video goes, or the other way round). */
function checkReferenceKinds(
  sites: ReadonlyArray<{ placeholder: string; position: string; path: string }>,
  here: FieldPath,
  references: Record<string, RecipeReference>,
  at: At,
): void {
  for (const site of sites) {
    if (!site.placeholder.startsWith(REF_FILE_ID_PREFIX)) continue;
    const ref = references[site.placeholder.slice(REF_FILE_ID_PREFIX.length)];
    const wants = site.position === 'video_source' ? 'video' : 'image';
    if (ref && ref.kind !== wants) {
      at(
        [...here, 'request', ...parsePath(site.path)],
        `reference '${ref.name}' is ${ref.kind === 'image' ? 'an image' : 'a video'}, but ${site.path} takes ${wants === 'image' ? 'an image' : 'a video'}`,
      );
    }
  }
}

// ---- using a recipe ----------------------------------------------------------------------------

const matchers = new WeakMap<RecipeRule, (path: string) => boolean>();

/**
 * The matcher of a glob in the recipe's dialect (picomatch, ignoring case), on a path relative to the
 * input dir, `/`-separated: the recipe's `match` and `genpipe run --include/--exclude` use it alike.
 *
 * @example globMatcher('**\/*.jpg')('trip/IMG_1.JPG') // true
 */
export function globMatcher(glob: string): (path: string) => boolean {
  // `i`: nocase; `s`: picomatch's `**` is made of `.`, which without it stops at a newline in a name
  return picomatch(glob, { nocase: true, flags: 'is' });
}

/**
 * Why `glob` cannot be matched on a path relative to the input dir (it starts with / or uses ..),
 * or null; a leading `./` is dropped from the glob (see the recipe's `match`).
 */
export function relativeGlobProblem(glob: string): string | null {
  if (glob.startsWith('/') || glob.split('/').includes('..')) {
    return 'the glob is matched on the path relative to the input dir: it cannot start with / or use ..';
  }
  return null;
}

function matcherOf(rule: RecipeRule): (path: string) => boolean {
  let m = matchers.get(rule);
  if (!m) {
    m = globMatcher(rule.match);
    matchers.set(rule, m);
  }
  return m;
}

/**
 * The first rule whose glob matches `input` (the path relative to the input dir, `/`-separated), or
 * null. Globs follow picomatch: `*` stays within a folder, `**` crosses folders (and matches none),
 * `{a,b}` is a set; matching ignores case, so `*.jpg` also takes `IMG_1.JPG`.
 *
 * @example findRule(recipe, 'trip/IMG_0001.JPG')?.index // 0
 */
export function findRule(recipe: Pick<Recipe, 'rules'>, input: string): RecipeRule | null {
  for (const rule of recipe.rules) if (matcherOf(rule)(input)) return rule;
  return null;
}

/**
 * Files that belong to the recipe rather than the batch: the recipe file and its references. Discovery
 * skips them when they sit inside the input dir.
 */
export function recipeFiles(recipe: Pick<Recipe, 'file' | 'references'>): string[] {
  return [recipe.file, ...Object.values(recipe.references).map((r) => r.absPath)];
}
