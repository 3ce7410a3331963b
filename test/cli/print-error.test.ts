import { describe, expect, it } from 'vitest';
import { EMULATOR_DEFAULT_KEY, printError } from '../../src/cli/print-error.ts';

function printed(err: unknown, secrets: string[], json = false): string {
  let out = '';
  printError(err, { secrets, json, stream: { write: (t: string) => (out += t) } });
  return out;
}

describe('printError redaction', () => {
  it("masks secrets and key-shaped texts but shows the emulator's published key unless it is in use", () => {
    const err = new Error(`try ${EMULATOR_DEFAULT_KEY} instead of svc-api-mine-1234 (token hunter2-long)`);
    const text = printed(err, ['hunter2-long']);
    expect(text).toContain(EMULATOR_DEFAULT_KEY);
    expect(text).not.toContain('svc-api-mine-1234');
    expect(text).not.toContain('hunter2-long');
    expect(printed(err, [EMULATOR_DEFAULT_KEY], true)).not.toContain(EMULATOR_DEFAULT_KEY);
  });
});
