/**
 * What a run following a worker's file says of each state it reads from the store: the stage that
 * brought the file there and that stage's words, as a run of its own would say them ("prompt ready",
 * not "uploaded", for a prompt file).
 */
import { describe, expect, it } from 'vitest';
import { newItem } from '../../src/pipeline/item.ts';
import { reachedBy } from '../../src/pipeline/stage-list.ts';

describe('reachedBy', () => {
  it('names the stage that reached the state and says it as the stage does', () => {
    const prompt = { ...newItem('fox.txt', '/in/fox.txt', 10, 0), inputAs: 'prompt' as const };
    expect(reachedBy({ ...prompt, state: 'uploaded' })).toEqual({
      stage: 'upload',
      said: 'prompt ready: the text goes in the request',
    });
    expect(reachedBy({ ...prompt, state: 'submitted' })).toEqual({ stage: 'submit', said: null });
    expect(reachedBy({ ...prompt, state: 'discovered' })).toEqual({ stage: null, said: null });
  });
});
