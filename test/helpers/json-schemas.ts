/**
 * The JSON Schemas of what genpipe writes and prints (docs/schemas/), compiled with ajv, strict: a
 * document passes only when it is what its schema says, snake_case keys and ISO times included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';

export const SCHEMAS_DIR = join(import.meta.dirname, '..', '..', 'docs', 'schemas');

/** The documents, by the name of their schema file without `.schema.json`. */
export type SchemaName = 'report' | 'result' | 'status' | 'event' | 'dry-run' | 'error' | 'health';

let ajv: Ajv | null = null;

function compiler(): Ajv {
  if (ajv) return ajv;
  ajv = new Ajv({
    strict: true,
    strictRequired: false,
    allErrors: true,
    allowUnionTypes: true,
    discriminator: true,
  });
  // ajv-formats is CommonJS: its plugin is the module itself, typed as its `default`.
  const addFormats = (formats as unknown as { default: typeof formats.default }).default ?? formats;
  addFormats(ajv);
  for (const file of readdirSync(SCHEMAS_DIR).filter((f) => f.endsWith('.schema.json'))) {
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMAS_DIR, file), 'utf8')) as object);
  }
  return ajv;
}

/** The validator of one document's schema. */
export function validatorOf(name: SchemaName): ValidateFunction {
  const v = compiler().getSchema(`${name}.schema.json`);
  if (!v) throw new Error(`no schema ${name}.schema.json in ${SCHEMAS_DIR}`);
  return v;
}

/**
 * What is wrong with `doc` by its schema, one line per fault (`/items/0 must NOT have additional
 * properties: sameAs`); empty when it is valid.
 */
export function schemaFaults(name: SchemaName, doc: unknown): string[] {
  const v = validatorOf(name);
  if (v(doc)) return [];
  return (v.errors ?? []).map((e) => {
    const extra = (e.params as { additionalProperty?: string }).additionalProperty;
    return `${name}${e.instancePath || '/'} ${e.message ?? e.keyword}${extra ? `: ${extra}` : ''}`;
  });
}
