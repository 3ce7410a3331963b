/**
 * Holds: an admin control that keeps /v1 generations `queued` or `processing` until the caller lets them
 * go, so a test can have a job in a given state for as long as it needs instead of racing its length.
 *
 * A hold is a rule: a state (`queued` or `processing`) and optional filters (client id, type, a prompt
 * pattern, the X-Request-Id of the create). A generation is checked against the rules when it would leave
 * that state (at the end of `queue_ms`, or when its processing is done and `processing_ms` has passed);
 * while a rule matches it, it stays ("is held") in that state, keeping its concurrency slot. It goes on
 * when every matching rule is removed, or when it is released on its own; then it is checked again only
 * at its next state's end. Rules added later catch generations that reach their state's end afterwards.
 */
import { GENERATION_TYPES, type GenerationType } from '../../spec/index.ts';
import { ConfigError } from '../config.ts';
import type { GenerationRec } from '../store.ts';

export type HoldState = 'queued' | 'processing';
const HOLD_STATES: readonly HoldState[] = ['queued', 'processing'];

/** One rule, as the admin endpoints show it. */
export interface HoldRule {
  /** `hold-1`, `hold-2`, … in the order they were added. */
  id: string;
  state: HoldState;
  /** Client id, or null for every client. */
  client: string | null;
  type: GenerationType | null;
  /** A regular expression searched for in the request's prompt; null for any (or no) prompt. */
  prompt: string | null;
  /** X-Request-Id of the create. */
  request_id: string | null;
}

/** A rule with the ids of the generations it holds now. */
export interface HoldView extends HoldRule {
  held: string[];
}

interface Parked {
  rec: GenerationRec;
  state: HoldState;
  resume: () => void;
}

function optString(input: Record<string, unknown>, key: string): string | null {
  const v = input[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length === 0) {
    throw new ConfigError(`Expected a non-empty string for ${key} but received ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * Checks a hold as POSTed to /_emulator/holds: `state` (default `processing`), `client`, `type`, `prompt`,
 * `request_id`; nothing else.
 * @param clients the known client ids
 * @throws ConfigError naming the key and the bad value
 * @example parseHold({ state: 'queued', prompt: 'number 1$' }, ['a', 'b'])
 */
export function parseHold(input: unknown, clients: readonly string[]): Omit<HoldRule, 'id'> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError('Expected a JSON object for the hold');
  }
  const body = input as Record<string, unknown>;
  for (const k of Object.keys(body)) {
    if (!['state', 'client', 'type', 'prompt', 'request_id'].includes(k)) {
      throw new ConfigError(`Unknown hold key '${k}'`);
    }
  }
  const state = body.state ?? 'processing';
  if (!HOLD_STATES.includes(state as HoldState)) {
    throw new ConfigError(`Expected queued or processing for state but received ${JSON.stringify(state)}`);
  }
  const client = optString(body, 'client');
  if (client !== null && !clients.includes(client)) throw new ConfigError(`Unknown client '${client}'`);
  const type = optString(body, 'type');
  if (type !== null && !GENERATION_TYPES.includes(type as GenerationType)) {
    throw new ConfigError(`Expected one of ${GENERATION_TYPES.join(', ')} for type but received "${type}"`);
  }
  const prompt = optString(body, 'prompt');
  if (prompt !== null) {
    try {
      new RegExp(prompt);
    } catch {
      throw new ConfigError(
        `Expected a regular expression for prompt but received ${JSON.stringify(prompt)}`,
      );
    }
  }
  return {
    state: state as HoldState,
    client,
    type: type as GenerationType | null,
    prompt,
    request_id: optString(body, 'request_id'),
  };
}

/** The rules and the generations they hold (see the module comment). */
export class Holds {
  readonly #rules = new Map<string, { rule: HoldRule; pattern: RegExp | null }>();
  readonly #parked = new Map<string, Parked>();
  #seq = 0;

  /** Adds a rule; generations reaching its state's end from now on are held by it. */
  add(rule: Omit<HoldRule, 'id'>): HoldView {
    this.#seq += 1;
    const full: HoldRule = { id: `hold-${this.#seq}`, ...rule };
    this.#rules.set(full.id, { rule: full, pattern: rule.prompt === null ? null : new RegExp(rule.prompt) });
    return this.view(full.id) as HoldView;
  }

  /** Removes a rule and lets go every generation no other rule holds. False when there is no such rule. */
  remove(id: string): boolean {
    if (!this.#rules.delete(id)) return false;
    this.#letGo();
    return true;
  }

  /** Removes every rule: every held generation goes on. */
  clear(): void {
    this.#rules.clear();
    this.#letGo();
  }

  /** Lets one held generation go on at once, whatever rules match it. False when it is not held. */
  release(generationId: string): boolean {
    const p = this.#parked.get(generationId);
    if (!p) return false;
    this.#parked.delete(generationId);
    p.resume();
    return true;
  }

  /** The state a generation is held in, or null. */
  heldIn(generationId: string): HoldState | null {
    return this.#parked.get(generationId)?.state ?? null;
  }

  /** One rule with what it holds, or null. */
  view(id: string): HoldView | null {
    const entry = this.#rules.get(id);
    if (!entry) return null;
    const held = [...this.#parked.values()]
      .filter((p) => this.#matches(entry, p.rec, p.state))
      .sort((a, b) => a.rec.seq - b.rec.seq)
      .map((p) => p.rec.id);
    return { ...entry.rule, held };
  }

  /** Every rule, oldest first. */
  list(): HoldView[] {
    return [...this.#rules.keys()].map((id) => this.view(id) as HoldView);
  }

  /**
   * Called when `rec` would leave `state`: true when a rule holds it (then `resume` runs once it is let
   * go), false when it may go on now.
   */
  park(rec: GenerationRec, state: HoldState, resume: () => void): boolean {
    if (![...this.#rules.values()].some((e) => this.#matches(e, rec, state))) return false;
    this.#parked.set(rec.id, { rec, state, resume });
    return true;
  }

  /** Forgets every held generation without letting it go (the emulator is closing). */
  abandon(): void {
    this.#parked.clear();
  }

  #matches(entry: { rule: HoldRule; pattern: RegExp | null }, rec: GenerationRec, state: HoldState): boolean {
    const { rule, pattern } = entry;
    if (rule.state !== state) return false;
    if (rule.client !== null && rule.client !== rec.clientId) return false;
    if (rule.type !== null && rule.type !== rec.type) return false;
    if (rule.request_id !== null && rule.request_id !== rec.requestId) return false;
    if (pattern !== null) {
      const prompt = rec.request.prompt;
      if (typeof prompt !== 'string' || !pattern.test(prompt)) return false;
    }
    return true;
  }

  #letGo(): void {
    for (const [id, p] of [...this.#parked]) {
      if ([...this.#rules.values()].some((e) => this.#matches(e, p.rec, p.state))) continue;
      this.#parked.delete(id);
      p.resume();
    }
  }
}
