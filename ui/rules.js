// rules.js - a semaphore's scheduling rules as the dashboard shows them
// (docs/api.md, "The semaphore's rules"; docs/engine.md): preemption with its
// grace, a bounded queue ("queue N of M", full or not), weighted shares on a
// rebalanced semaphore, a rate with its burst, backdating, and a semaphore
// made by its claims' inline limit. The overview's card markers, the lock
// page's rules and shares table, and the words of a waiter's preemption
// status on the claim page all come from here.
import { h, fact, claimLink, countdown } from './lib.js';

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

// A bounded queue is full when as many claims wait as its max_pending.
export const queueFull = (l) => Boolean(l.max_pending) && l.pending_count >= l.max_pending;

// Small markers for a card (and the table view's name cell): preempts,
// bounded (and full), rate-limited, weighted, inline.
export function ruleBadges(l) {
  if (l.kind !== 'semaphore') return [];
  const full = queueFull(l);
  return [
    l.inline && h('span', { class: 'badge rule inline', 'data-rule': 'inline', title: 'made by its claims\' inline limit, gone when idle' }, 'inline'),
    l.preempt && h('span', {
      class: 'badge rule preempt', 'data-rule': 'preempt',
      title: `preempts: a waiter of higher priority revokes holders of lower priority (grace ${l.preempt_grace})`,
    }, 'preempts'),
    l.max_pending && h('span', {
      class: `badge rule bound${full ? ' full' : ''}`, 'data-rule': 'bound', 'data-full': String(full),
      title: `at most ${l.max_pending} waiters; when full, ${l.on_full === 'drop_oldest' ? 'the oldest waiter is superseded' : 'new claims are refused'}`,
    }, `queue ${l.pending_count}/${l.max_pending}${full ? ' full' : ''}`),
    l.rate && h('span', { class: 'badge rule rate', 'data-rule': 'rate', title: `at most ${l.rate} grants, burst ${l.burst}` }, `rate ${l.rate}`),
    l.strategy === 'rebalanced' && l.weights && Object.keys(l.weights).length > 0
      && h('span', { class: 'badge rule weights', 'data-rule': 'weights', title: 'weighted shares between rebalance keys' }, 'weighted'),
  ];
}

// "queue 2 of 2 (full)": the bound indicator of a lock's page.
export function queueBound(l) {
  const full = queueFull(l);
  return h('span', { class: `queue-bound${full ? ' full' : ''}`, 'data-full': String(full) },
    `queue ${l.pending_count} of ${l.max_pending}${full ? ' (full)' : ''}`);
}

// The rules of a semaphore (or pattern) as facts of its configuration panel.
export function ruleFacts(l, pattern) {
  if (l.kind !== 'semaphore') return [];
  const weights = l.weights ? Object.entries(l.weights) : [];
  const any = l.inline || l.preempt || l.max_pending || l.rate || (l.backdate && l.backdate !== '0') || l.strategy === 'rebalanced';
  return [
    l.inline && fact('Inline', 'made by its claims\' inline limit, gone when idle', 'inline'),
    l.preempt && fact('Preemption', [
      h('span', { class: 'rule-on' }, 'on'),
      `: the first waiter that cannot fit revokes holders of lower priority, which keep their slots for ${
        l.preempt_grace === '0' ? 'no time (grace 0: canceled at once)' : `${l.preempt_grace} (grace)`}`], 'preempt'),
    l.max_pending && fact('Queue bound', [
      pattern ? `at most ${l.max_pending} waiters` : queueBound(l),
      `: at most ${plural(l.max_pending, 'waiter')}; a claim arriving at a full queue `,
      l.on_full === 'drop_oldest' ? 'supersedes the oldest waiter (on_full drop_oldest)' : 'is refused, 409 queue_full (on_full reject)'], 'max-pending'),
    l.strategy === 'rebalanced' && fact('Weights', weights.length === 0
      ? `every key weighs ${l.default_weight ?? 1}`
      : `${weights.map(([k, w]) => `${k} ${w}`).join(', ')}; other keys ${l.default_weight ?? 1}`, 'weights'),
    l.rate && fact('Rate', `${l.rate}, burst ${l.burst}: at most ${l.rate.split('/')[0]} grants per ${l.rate.split('/')[1]} on average, ${l.burst} at once after a quiet time`, 'rate'),
    l.backdate && l.backdate !== '0' && fact('Backdate', `a claim may set created up to ${l.backdate} back`, 'backdate'),
    !any && fact('Rules', 'none (no preemption, no queue bound, no rate)', 'rules'),
  ];
}

// ---- weighted shares ----------------------------------------------------------------

const weightOf = (l, key) => (l.weights && l.weights[key] !== undefined ? l.weights[key] : (l.default_weight ?? 1));
const age = (a, b) => (Date.parse(a.created) - Date.parse(b.created)) || (Date.parse(a.arrived) - Date.parse(b.arrived));

// The shares of a rebalanced semaphore, computed as the engine does
// (docs/engine.md, "Weighted shares"): the keys present are those of its
// holders and waiters (no key is the key ""); with W their weights summed, a
// key's quota is floor(limit * w / W), and the slots these floors leave go
// one each to the keys whose oldest waiting claims are oldest (created, then
// arrival); keys with no waiter get none of them. `claims` is the lock's
// listing (GET /v1/claims?lock=KEY: holders, then waiters).
export function computeShares(l, claims) {
  const keys = new Map();
  const of = (c) => {
    const k = c.rebalance_key ?? '';
    if (!keys.has(k)) keys.set(k, { key: k, weight: weightOf(l, k), held: 0, holders: 0, waiting: 0, oldest: null });
    return keys.get(k);
  };
  const here = (c) => c.locks.find((x) => x.kind === 'semaphore' && x.name === l.name) || { slots: 1 };
  for (const c of claims) {
    const k = of(c);
    if (c.state === 'pending') {
      k.waiting++;
      if (!k.oldest || age(c, k.oldest) < 0) k.oldest = c;
    } else if (c.state === 'held' || c.state === 'revoking') {
      k.held += here(c).slots;
      k.holders++;
    }
  }
  const list = [...keys.values()];
  const W = list.reduce((n, k) => n + k.weight, 0);
  for (const k of list) {
    k.quota = W ? Math.floor((l.limit * k.weight) / W) : 0;
    k.rem = W ? (l.limit * k.weight) % W : 0; // exact: limit and weights stay below 2^53
  }
  const extra = Math.max(0, l.limit - list.reduce((n, k) => n + k.quota, 0));
  const waiting = list.filter((k) => k.oldest).sort((a, b) => age(a.oldest, b.oldest));
  // The leftover slots, as the engine gives them: to the waiting keys with
  // the largest remainders (limit × weight mod W), the oldest waiter first
  // among equal ones; keys with no waiter get none.
  const byRem = [...waiting].sort((a, b) => b.rem - a.rem || age(a.oldest, b.oldest));
  byRem.forEach((k, i) => { k.extra = i < extra; if (k.extra) k.quota++; });
  // Shown by the engine's rank: keys by their oldest waiter, then those without.
  return { W, extra, keys: [...waiting, ...list.filter((k) => !k.oldest).sort((a, b) => a.key.localeCompare(b.key))] };
}

export function sharesTable(l, s, partial) {
  if (s.keys.length === 0) return h('p', { class: 'muted', 'data-shares': 'none' }, 'No key holds or waits: nothing to share.');
  return [
    h('p', { class: 'muted shares-note' },
      `${plural(s.keys.length, 'key')} present, weights summed ${s.W}: a key's quota is floor(${l.limit} × weight / ${s.W})`,
      s.extra > 0 ? `, and the ${plural(s.extra, 'slot')} these floors leave go${s.extra === 1 ? 'es' : ''} one each to the waiting keys with the largest remainders of ${l.limit} × weight / ${s.W}, the oldest waiter first among equal ones (+1)` : '',
      '. A key below its quota is served first; a slot nobody under quota wants goes to the oldest waiter.',
      partial ? ` Counted over the first ${partial} claims of the lock only.` : ''),
    h('div', { class: 'table-wrap stack' }, h('table', { class: 'shares', 'aria-label': `Shares of ${l.name}` },
      h('thead', {}, h('tr', {}, ['Key', 'Weight', 'Quota', 'Held', 'Waiting'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, s.keys.map((k) => h('tr', { 'data-key': k.key, class: k.held < k.quota && k.waiting > 0 ? 'below' : null },
        h('td', { class: 'key name' }, k.key === '' ? h('span', { class: 'muted' }, '(no key)') : k.key),
        h('td', { class: 'weight', 'data-label': 'weight' }, k.weight),
        h('td', { class: 'quota', 'data-label': 'quota', title: k.extra ? 'one of the leftover slots' : null }, `${k.quota}${k.extra ? ' (+1)' : ''}`),
        h('td', { class: 'held', 'data-label': 'held' }, `${k.held}${k.held < k.quota && k.waiting > 0 ? ' (below)' : ''}`),
        h('td', { class: 'waiting', 'data-label': 'waiting' }, k.waiting)))))),
  ];
}

// ---- a waiter's preemption, share and rate, in words ------------------------------------

// rule: the why's rule there (a head held back by the rate preempts with
// its token).
export function preemptWords(p, rule) {
  if (!p) return null;
  const n = p.holders;
  // Revoking holders are preempted, or revoked by a newer claim of their
  // group; the why counts the preempted ones (an older server: all).
  const pre = p.preempted ?? n;
  const who = pre === n ? plural(n, 'preempted holder')
    : pre === 0 ? `${plural(n, 'holder')} revoked by a newer claim of ${n === 1 ? 'its' : 'their'} group`
      : `${plural(n, 'revoking holder')} (${pre} preempted, ${n - pre} revoked by a newer claim of their group)`;
  switch (p.status) {
    case 'waiting': return `Preemption: waiting for ${who} to leave (at the end of ${n === 1 ? 'its' : 'their'} grace, or sooner if released).`;
    case 'will': return rule === 'rate'
      ? `Preemption: will preempt ${plural(n, 'holder')} of lower priority when the rate lets it in at once.`
      : `Preemption: will preempt ${plural(n, 'holder')} of lower priority once its other locks are free.`;
    case 'not_head': return 'Preemption: would preempt, but a claim ahead of it comes first.';
    case 'too_few': return 'Preemption: would preempt, but holders of lower priority hold too few slots.';
    default: return `Preemption: ${p.status}.`;
  }
}

export function shareWords(s, key) {
  if (!s) return null;
  const below = s.held < s.quota;
  return `Share: its key ${key ? `“${key}”` : '(no key)'} has a quota of ${plural(s.quota, 'slot')} (weight ${s.weight} of ${s.weights}) and holds ${s.held}${below ? ': below its quota' : ': at or above its quota'}.`;
}

export function rateLine(r) {
  if (!r.admit_at) return null;
  // admit_at is this waiter's own token: those the rate holds back ahead of
  // it take the ones before.
  return h('p', { class: 'rate-admit', 'data-admit-at': r.admit_at }, 'Rate: admitted when its turn for a token of the rate comes, at ', countdown(r.admit_at), '.');
}

// A holder revoked while it holds: preempted (by a waiter of higher
// priority) or revoked by its group's newer claim, with its end of grace.
export function revokedNote(c) {
  const preempted = /^preempted/.test(c.reason || '');
  return h('div', { class: 'revoked', 'data-revoked': preempted ? 'preempted' : 'revoked' },
    preempted ? 'preempted by ' : 'revoked by ', c.by ? claimLink(c.by) : 'another claim',
    preempted ? '' : ' (its group\'s newer claim)',
    c.revoke_at ? [', grace ends ', countdown(c.revoke_at, 'grace')] : '');
}
