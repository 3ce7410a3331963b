/**
 * The `steps` of a chain rule: a list of `{ name, request, download }` whose media positions may say
 * `{ from: <step> }` for "the output of that step". Read and checked here before anything is paid:
 * names (unique, known, not the step itself), cycles, and the kinds that can chain — where the service
 * chains by `generation_id` (an image_edit source from an image step; a video_edit / video_reframe
 * source, or a video.start_frame / end_frame extend, from a video step) the placeholder is a
 * generation_id; an image step's output anywhere else an image goes (a video's start_frame, an
 * image_ref, …) travels by its fresh output URL. The request rules themselves (the extend table: one
 * generation reference, HDR, loop) are src/spec's, run on each step by the recipe.
 */
import type { GenerationType, ImageRef } from '../spec/index.ts';
import { describeValue } from '../spec/index.ts';
import { stepPlaceholder } from './chain.ts';
import {
  getAt,
  imageRefPositions,
  isObject,
  type Json,
  type ReferenceKind,
  requestType,
  resolveReferences,
  setAt,
  standInUnresolved,
} from './recipe-request.ts';
import type { FieldPath } from './recipe-yaml.ts';

/** One step of a chain rule. */
export interface RecipeStep {
  name: string;
  /** Position in `steps` as written. */
  index: number;
  /**
   * The request as written, `{ ref: <name> }` replaced as in a rule's request and `{ from: <step> }`
   * by the parent's placeholder (`{ generation_id: '$step:<name>' }` or `{ url: '$step:<name>' }`).
   */
  request: Json;
  /** The steps whose outputs the request uses, in the order they appear. */
  after: string[];
  /** Its outputs are downloaded: `download` as written, else true for a step no other step uses. */
  download: boolean;
}

const STEP_KEYS = ['name', 'request', 'download'] as const;
/** Names a step may have (also a folder name under the input's out folder). */
export const STEP_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

type At = (path: FieldPath, message: string) => void;

/** What kind of output a generation type makes. */
export function outputKind(type: GenerationType): 'image' | 'video' {
  return type === 'image' || type === 'image_edit' ? 'image' : 'video';
}

const article = (kind: string) => (kind === 'image' ? 'an image' : 'a video');

interface FromSite {
  step: number;
  path: Array<string | number>;
  parent: string;
}

/**
 * How step `child` takes the output of `parent` at `path`: the placeholder's channel, or the problem
 * (in the service's words for a generation of the wrong kind).
 */
function channelFor(
  path: ReadonlyArray<string | number>,
  childType: GenerationType,
  parent: { name: string; type: GenerationType },
): { channel: 'generation_id' | 'url' } | { problem: string } {
  const kind = outputKind(parent.type);
  const where = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');
  const wrong = (needs: 'image' | 'video') => ({
    problem: `${where}: step '${parent.name}' is of type '${parent.type}', but this position needs ${article(needs)} output`,
  });
  if (path.length === 1 && path[0] === 'source') {
    if (childType === 'image_edit') return kind === 'image' ? { channel: 'generation_id' } : wrong('image');
    if (childType === 'video_edit' || childType === 'video_reframe') {
      return kind === 'video' ? { channel: 'generation_id' } : wrong('video');
    }
    return { channel: 'generation_id' }; // the service's own rule refuses a source here
  }
  const anchor = path[0] === 'video' && (path[1] === 'start_frame' || path[1] === 'end_frame');
  if (anchor && kind === 'video') return { channel: 'generation_id' }; // an extend
  if (kind === 'image') return { channel: 'url' };
  return wrong('image');
}

/** The steps' from-sites, each `{ from }` checked for shape and for naming another known step. */
function fromSites(
  requests: readonly (Json | null)[],
  names: readonly (string | null)[],
  here: FieldPath,
  at: At,
) {
  const sites: FromSite[] = [];
  /** `{ from }`s that name no usable step: stood in, so that the rest of their request is checked. */
  const unusable: Array<Omit<FromSite, 'parent'>> = [];
  let sound = true;
  const known = names.filter((n): n is string => n !== null);
  requests.forEach((request, step) => {
    if (!request) return;
    for (const path of [...imageRefPositions(request)]) {
      const value = getAt(request, path);
      if (!isObject(value) || !('from' in value)) continue;
      const field = [...here, step, 'request', ...path];
      const parent = value.from;
      const extra = Object.keys(value).filter((k) => k !== 'from');
      if (typeof parent !== 'string' || parent === '') {
        at([...field, 'from'], `must be the name of a step, not ${describeValue(parent)}`);
      } else if (extra.length > 0) {
        at(field, `a step's output is written { from: ${parent} } alone (remove ${extra.join(', ')})`);
      } else if (parent === names[step]) {
        at([...field, 'from'], `a step cannot use its own output`);
      } else if (!known.includes(parent)) {
        at([...field, 'from'], `no step named '${parent}' (steps: ${known.join(', ')})`);
      } else {
        sites.push({ step, path, parent });
        continue;
      }
      unusable.push({ step, path });
      sound = false;
    }
  });
  return { sites, unusable, sound };
}

/**
 * What stands in for a `{ from }` that cannot be used (it names no step, or a step of the wrong kind),
 * so that the service's rules still run on the rest of the step: an output by id at a `source` (as the
 * service chains it), by url elsewhere (an image: no extend rule is assumed).
 */
function standInFrom(path: ReadonlyArray<string | number>): ImageRef {
  return stepPlaceholder('?', path.length === 1 && path[0] === 'source' ? 'generation_id' : 'url');
}

/** The steps in an order where every parent comes before its dependants, or the cycle found. */
function topoOrder(
  names: readonly string[],
  edges: ReadonlyMap<string, readonly string[]>,
): { cycle: string[] } | { order: string[] } {
  const order: string[] = [];
  const mark = new Map<string, 'active' | 'done'>();
  const visit = (name: string, trail: string[]): string[] | null => {
    if (mark.get(name) === 'done') return null;
    if (mark.get(name) === 'active') return [...trail.slice(trail.indexOf(name)), name];
    mark.set(name, 'active');
    for (const parent of edges.get(name) ?? []) {
      const cycle = visit(parent, [...trail, name]);
      if (cycle) return cycle;
    }
    mark.set(name, 'done');
    order.push(name);
    return null;
  };
  for (const name of names) {
    const cycle = visit(name, []);
    if (cycle) return { cycle };
  }
  return { order };
}

/** A step entry's name, request (references resolved) and download flag, or null where unsound. */
function readStepEntry(
  raw: unknown,
  field: FieldPath,
  references: { usable: Readonly<Record<string, ReferenceKind>>; unusable: Readonly<Record<string, string>> },
  at: At,
): { name: string | null; request: Json | null; download: boolean | null; sound: boolean } {
  if (!isObject(raw)) {
    at(field, `a step is a map with name and request, not ${describeValue(raw)}`);
    return { name: null, request: null, download: null, sound: false };
  }
  let sound = true;
  for (const key of Object.keys(raw)) {
    if (!(STEP_KEYS as readonly string[]).includes(key)) {
      at([...field, key], `unknown field (a step has ${STEP_KEYS.join(', ')})`);
      sound = false;
    }
  }
  let name: string | null = null;
  if (typeof raw.name === 'string' && STEP_NAME_RE.test(raw.name)) name = raw.name;
  else {
    at([...field, 'name'], `a step name is 1 to 64 letters, digits, _ or -, not ${describeValue(raw.name)}`);
    sound = false;
  }
  let download: boolean | null = null;
  if (raw.download !== undefined) {
    if (typeof raw.download === 'boolean') download = raw.download;
    else {
      at([...field, 'download'], `must be true or false, not ${describeValue(raw.download)}`);
      sound = false;
    }
  }
  if (!isObject(raw.request)) {
    at([...field, 'request'], `must be a map of request fields, not ${describeValue(raw.request)}`);
    return { name, request: null, download, sound: false };
  }
  const request = structuredClone(raw.request);
  const problems = resolveReferences(request, references.usable, references.unusable);
  for (const p of problems) at([...field, 'request', ...p.path], p.message);
  // A reference with a problem stands in as some reference: the rest of the step is still checked.
  standInUnresolved(request);
  return { name, request, download, sound: sound && problems.length === 0 };
}

/** A rule's steps as read (see readSteps). */
export interface ReadSteps {
  /**
   * Every step with a request, parents before dependants where the steps form no cycle (else as
   * written); when `sound` is false, a step's problem places hold stand-ins, for the service's rules.
   */
  steps: RecipeStep[];
  /** No problem was found: the steps are the rule's. */
  sound: boolean;
}

/**
 * Reads a rule's `steps` (at `here`, e.g. `rules[0].steps`): every problem reported through `at`, the
 * chain checks (cycles, the kinds that can chain) made also when other problems were found.
 *
 * @returns the steps (see ReadSteps), or null when `steps` is not a list of them
 */
export function readSteps(
  value: unknown,
  here: FieldPath,
  references: { usable: Readonly<Record<string, ReferenceKind>>; unusable: Readonly<Record<string, string>> },
  at: At,
): ReadSteps | null {
  if (!Array.isArray(value) || value.length === 0) {
    at(here, `must be a non-empty list of steps ({ name, request }), not ${describeValue(value)}`);
    return null;
  }
  const entries = value.map((raw, i) => readStepEntry(raw, [...here, i], references, at));
  let sound = entries.every((e) => e.sound);
  const names = entries.map((e) => e.name);
  names.forEach((name, i) => {
    if (name !== null && names.indexOf(name) !== i) {
      at([...here, i, 'name'], `step name '${name}' is used twice (also steps[${names.indexOf(name)}])`);
      sound = false;
    }
  });
  const found = fromSites(
    entries.map((e) => e.request),
    names,
    here,
    at,
  );
  if (!found.sound) sound = false;
  for (const site of found.unusable) setAt(entries[site.step]!.request!, site.path, standInFrom(site.path));
  const sites = found.sites;
  // The graph of the named steps (a name used twice: its first step).
  const graph = names.filter((n, i): n is string => n !== null && names.indexOf(n) === i);
  const edges = new Map<string, string[]>();
  for (const site of sites) {
    const name = names[site.step];
    if (name === null || name === undefined || names.indexOf(name) !== site.step) continue;
    const list = edges.get(name) ?? [];
    if (!list.includes(site.parent)) list.push(site.parent);
    edges.set(name, list);
  }
  const sorted = topoOrder(graph, edges);
  if ('cycle' in sorted) {
    const [first, second] = sorted.cycle;
    const site = sites.find((s) => names[s.step] === first && s.parent === second) ?? sites[0]!;
    at(
      [...here, site.step, 'request', ...site.path, 'from'],
      `the steps form a cycle (${sorted.cycle.join(' takes from ')}): a step cannot use a step that uses it`,
    );
    sound = false;
  }
  for (const site of sites) {
    const request = entries[site.step]!.request!;
    const parentEntry = entries[names.indexOf(site.parent)]!;
    const how = parentEntry.request
      ? channelFor(site.path, requestType(request), {
          name: site.parent,
          type: requestType(parentEntry.request),
        })
      : null;
    if (how && 'problem' in how) {
      at([...here, site.step, 'request', ...site.path, 'from'], how.problem);
      sound = false;
    }
    const placeholder =
      how && 'channel' in how ? stepPlaceholder(site.parent, how.channel) : standInFrom(site.path);
    setAt(request, site.path, placeholder);
  }
  const used = new Set(sites.map((s) => s.parent));
  const order =
    'order' in sorted
      ? sorted.order.map((name) => names.indexOf(name))
      : entries.map((_, i) => i).filter((i) => names[i] !== null && names.indexOf(names[i]!) === i);
  // Steps without a usable name still have their request checked (only when something else is wrong).
  for (let i = 0; i < entries.length; i++) if (!order.includes(i)) order.push(i);
  const steps = order
    .filter((index) => entries[index]!.request !== null)
    .map((index): RecipeStep => {
      const entry = entries[index]!;
      const name = entry.name ?? `#${index}`;
      return {
        name,
        index,
        request: entry.request!,
        after: entry.name !== null && names.indexOf(entry.name) === index ? (edges.get(name) ?? []) : [],
        download: entry.download ?? !used.has(name),
      };
    });
  return { steps, sound };
}
