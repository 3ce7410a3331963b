/**
 * The client's balance: checked at submission (402), debited at completion. Because the debit comes
 * late, several concurrent jobs can pass the check and the late ones run out (budget_exhausted).
 */
import { INSUFFICIENT_BALANCE_DETAIL } from '../../spec/index.ts';
import { HttpError } from '../http-error.ts';
import type { ClientRec } from '../store.ts';

/**
 * Rejects a create the balance cannot cover; nothing is queued.
 * @throws HttpError 402 `Insufficient balance. Please add funds to continue.`
 */
export function checkBalance(client: ClientRec, cost: number): void {
  if (client.balance < cost) throw new HttpError(402, INSUFFICIENT_BALANCE_DETAIL);
}

/** Debits `cost` when the balance covers it; false (nothing debited) when it no longer does. */
export function debit(client: ClientRec, cost: number): boolean {
  if (client.balance < cost) return false;
  client.balance -= cost;
  return true;
}
