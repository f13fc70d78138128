// actions.js - what an operator may change from the dashboard: cancel a
// claim (pending: it leaves the queue; held or revoking: it is revoked),
// set a semaphore's limit, and clear a lock's queue (DELETE
// /v1/queue?lock=KEY, with the operate permission). Each asks first, saying what will happen in the
// terms of the model (docs/design.md): lowering a limit revokes nobody, 0
// pauses, a cancel ends the claim `canceled` at once and what it held moves
// on. A refusal (a limited token) is shown in words.
import { api, enc, lockKey, lockApi, words, showError, AuthError } from './lib.js';
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
  return [`The limit stays ${limit}: nothing changes, and no event is recorded.`];
}

// A semaphore's configuration but its limit, as its GET shows it, for a PUT
// that changes only the limit (a PUT replaces the whole configuration, and a
// rule left out would be turned off): strategy, lease, overtake limit, and
// the rules (preempt and its grace, max_pending and on_full, weights and
// default_weight, rate and burst, backdate), each only when set, since a
// companion field without its rule is refused.
export function keptConfig(l) {
  const c = { strategy: l.strategy, lease: l.lease };
  if (l.overtake_limit !== undefined) c.overtake_limit = l.overtake_limit;
  if (l.preempt) {
    c.preempt = true;
    if (l.preempt_grace !== undefined) c.preempt_grace = l.preempt_grace;
  }
  if (l.max_pending) {
    c.max_pending = l.max_pending;
    if (l.on_full) c.on_full = l.on_full;
  }
  if (l.strategy === 'rebalanced') {
    if (l.weights && Object.keys(l.weights).length > 0) c.weights = l.weights;
    if (l.default_weight !== undefined && l.default_weight !== 1) c.default_weight = l.default_weight;
  }
  if (l.rate) {
    c.rate = l.rate;
    if (l.burst !== undefined) c.burst = l.burst;
  }
  if (l.backdate && l.backdate !== '0') c.backdate = l.backdate;
  return c;
}

// Sets a semaphore's limit after the person confirms, keeping the rest of
// its configuration (keptConfig); true when done.
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
      body: JSON.stringify({ limit, ...keptConfig(l) }),
    });
    showError('');
    return true;
  } catch (e) {
    if (!(e instanceof AuthError)) showError(words(e, `Changing the limit of ${name}`));
    return false;
  }
}


// What clearing a lock's queue will do; `l` is the lock as the server reads
// it now (GET ?limit=0: the counts).
export function clearLines(key, l) {
  const n = l.pending_count;
  return [
    `${plural(n, 'claim')} waiting for ${key} ${n === 1 ? 'ends' : 'end'} canceled ("canceled by an operator"), all in one step, so that none is granted on the way out.`,
    `The ${plural(l.holders_count, 'holder')} keep${l.holders_count === 1 ? 's' : ''} ${l.holders_count === 1 ? 'its' : 'their'} slots. A claim that also waits for other locks leaves their queues too; its client learns that an operator stopped it the next time it asks.`,
    'This needs the operate permission on the lock (or an admin token).',
  ];
}

// Clears a lock's queue after the person confirms (the dialog counts the
// waiters as the server has them now); true when done.
export async function clearQueue(key) {
  let l;
  try {
    l = await api(`${lockApi(key)}?limit=0`);
  } catch (e) {
    if (!(e instanceof AuthError)) showError(words(e, `Reading ${key}`));
    return false;
  }
  if (l.pending_count === 0) {
    showError(`No claim waits for ${key} any more: nothing to clear.`);
    return false;
  }
  const ok = await confirmAction({
    title: `Clear the queue of ${key}: cancel ${plural(l.pending_count, 'waiting claim')}?`,
    lines: clearLines(key, l),
    confirm: `Cancel ${plural(l.pending_count, 'waiting claim')}`,
    danger: true,
  });
  if (!ok) return false;
  try {
    await api(`/v1/queue?lock=${encodeURIComponent(key)}`, { method: 'DELETE' });
    showError('');
    return true;
  } catch (e) {
    if (!(e instanceof AuthError)) showError(words(e, `Clearing the queue of ${key}`));
    return false;
  }
}
