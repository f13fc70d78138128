// actions.js - what an operator may change from the dashboard: cancel a
// claim (pending: it leaves the queue; held or revoking: it is revoked) and
// set a semaphore's limit. Each asks first, saying what will happen in the
// terms of the model (docs/design.md): lowering a limit revokes nobody, 0
// pauses, a cancel ends the claim `canceled` at once and what it held moves
// on. A refusal (a limited token) is shown in words.
import { api, enc, lockKey, words, showError, AuthError } from './lib.js';
import { confirmAction } from './dialog.js';

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

// What a cancel will do, for the confirmation.
export function cancelLines(c) {
  const locks = c.locks.map(lockKey).join(', ');
  if (c.state === 'pending') {
    return [
      `Cancel the pending claim of ${c.holder}? It leaves the queue of ${locks} and ends canceled ("canceled by an operator").`,
      'The claims behind it move up; its client learns that an operator stopped it the next time it asks.',
    ];
  }
  const slots = c.locks.map((l) => `${lockKey(l)}${l.slots > 1 ? ` ×${l.slots}` : ''}`).join(', ');
  return [
    `Revoke the claim of ${c.holder}? It ends canceled ("canceled by an operator") now, and what it holds (${slots}) goes to the next waiters at once.`,
    'Its process is not stopped by this: its client learns it was canceled at its next renewal or wait, and should stop. A fencing token lets what the lock protects refuse it meanwhile.',
  ];
}

// Cancels (or revokes) a claim after the person confirms; true when done.
export async function cancelClaim(c) {
  const ok = await confirmAction({
    title: c.state === 'pending' ? 'Cancel this claim?' : 'Revoke this claim?',
    lines: cancelLines(c),
    confirm: c.state === 'pending' ? 'Cancel the claim' : 'Revoke the claim',
    danger: true,
  });
  if (!ok) return false;
  try {
    await api(`/v1/claims/${encodeURIComponent(c.id)}/cancel`, { method: 'POST' });
    showError('');
    return true;
  } catch (e) {
    if (!(e instanceof AuthError)) showError(words(e, `Canceling ${c.holder}'s claim`));
    return false;
  }
}

// What a new limit will do, for the confirmation; `l` is the lock as the
// server reads it now (used, holders_count, pending_count).
export function limitLines(l, limit) {
  if (l.name.endsWith('*')) {
    return [`Every semaphore matching ${l.name} that has no configuration of its own gets a limit of ${limit}. `
      + (limit === 0 ? 'They are paused: their holders keep their slots, nothing new is granted.'
        : 'Lowering it revokes no holder; raising it grants the waiters that then fit.')];
  }
  const held = `${plural(l.holders_count, 'claim')} ${l.holders_count === 1 ? 'holds' : 'hold'} ${plural(l.used, 'slot')}`;
  const waiting = plural(l.pending_count, 'claim');
  if (limit === 0) {
    return [`0 pauses ${l.name}: ${held} and keep${l.holders_count === 1 ? 's' : ''} them (none is revoked); no claim is granted until the limit is raised again. ${waiting} waiting stay queued.`];
  }
  if (limit < l.limit) {
    const over = l.used > limit
      ? `new grants wait until releases bring the slots in use under ${limit}`
      : `claims are granted only while they fit in ${limit} slots`;
    return [`${held}: none is revoked; ${over}. ${waiting} waiting.`];
  }
  if (limit > l.limit) {
    return [`${held}. Raising the limit grants at once the waiting claims that then fit (${waiting} waiting, first in queue order).`];
  }
  return [`The limit stays ${limit}; the semaphore's configuration is written again (a semaphore.updated event).`];
}

// Sets a semaphore's limit after the person confirms, keeping its strategy,
// lease and overtake limit (a PUT replaces the whole configuration); true
// when done.
export async function setLimit(name, limit) {
  if (!Number.isInteger(limit) || limit < 0) {
    showError('The limit must be a whole number, 0 or more (0 pauses the semaphore).');
    return false;
  }
  let l;
  try {
    l = await api(`/v1/semaphores/${enc(name)}?limit=0`); // the counts, not the lists
  } catch (e) {
    if (!(e instanceof AuthError)) showError(words(e, `Reading ${name}`));
    return false;
  }
  const ok = await confirmAction({
    title: `Set ${name}'s limit from ${l.limit} to ${limit}?`,
    lines: limitLines(l, limit),
    confirm: `Set the limit to ${limit}`,
  });
  if (!ok) return false;
  try {
    await api(`/v1/semaphores/${enc(name)}`, {
      method: 'PUT',
      body: JSON.stringify({
        limit, strategy: l.strategy, lease: l.lease,
        ...(l.overtake_limit !== undefined ? { overtake_limit: l.overtake_limit } : {}),
      }),
    });
    showError('');
    return true;
  } catch (e) {
    if (!(e instanceof AuthError)) showError(words(e, `Changing the limit of ${name}`));
    return false;
  }
}

