/**
 * The fence of distributed mode: every admission of an item claims its row (a claim number the store
 * raises by one), and every later write of the item is made only while that claim is still the row's
 * latest. A worker that was paused long enough for its item to be admitted again by another worker
 * finds its next write refused with this error — the write that records a create's intent included,
 * so the create is never sent — and drops the item without touching it further.
 */
export class ItemTakenOverError extends Error {
  override name = 'ItemTakenOverError';
  readonly code = 'item_taken_over';

  constructor(readonly input: string) {
    super(
      `${input} was taken up meanwhile by another process on the store (a worker, or a run of the same out dir); left to it, nothing sent`,
    );
  }
}
