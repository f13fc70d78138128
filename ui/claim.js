// claim.js - one claim's page (/claims/{id}): its facts (arrived, granted,
// ended, how long it waited and held, its lease counting down, a revoking
// claim's end of grace counting down), who blocks it while it waits (per
// lock: its position, the claims ahead from /why, the lock's holders), the
// cancel or revoke action, and its timeline. The scheduling rules: what
// preemption does for a waiter, its key's share, the time a rate admits it,
// its groups and inline limits, and who preempted it.
import {
  h, api, ApiError, AuthError, clock, stamp, span, claimLink, lockChip, lockKey, lockApi, lockLink, fact,
  holderCell, countdown, durations, refusal, mayEnd, LEASE_WARN_MS,
} from './lib.js';
import { cancelClaim } from './actions.js';
import { preemptWords, shareWords, rateLine, revokedNote } from './rules.js';

const BLOCKERS = 10; // holders of a blocking lock shown on the page

export async function viewClaim(ctx, id) {
  const path = `/v1/claims/${encodeURIComponent(id)}`;
  let claim;
  try {
    claim = await api(path);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      return h('section', {}, h('h1', {}, 'Claim not found'),
        h('p', {}, `No claim ${id} (ended claims are kept for an hour).`));
    }
    if (e instanceof ApiError && e.status === 403) return h('section', {}, h('h1', {}, 'Claim ', h('code', {}, id)), refusal(e, 'Reading this claim'));
    throw e;
  }
  const pending = claim.state === 'pending';
  const [why, ev] = await Promise.all([
    pending ? api(`${path}/why`) : Promise.resolve({ reasons: [] }),
    claimEvents(id).catch((e) => { if (e instanceof AuthError) throw e; return { error: e }; }),
  ]);
  const blockers = await holdersOf(why.reasons);
  const inline = claim.locks.some((l) => l.limit !== undefined);
  const live = ['pending', 'held', 'revoking'].includes(claim.state);
  return h('section', { 'aria-labelledby': 'claim-title' },
    h('h1', { id: 'claim-title' }, 'Claim ', h('code', {}, claim.id)),
    facts(claim),
    live && mayEnd(claim) && h('div', { class: 'actions' },
      h('button', {
        type: 'button', class: 'danger', 'data-action': 'cancel',
        onclick: async () => { if (await cancelClaim(claim)) ctx.rerender(); },
      }, pending ? 'Cancel claim…' : 'Revoke claim…'),
      h('span', { class: 'muted' }, pending ? 'It leaves the queue and ends canceled.' : 'It ends canceled; what it holds goes to the next waiters.')),
    h('h2', {}, 'Locks'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'claim-locks', 'aria-label': 'Locks of this claim' },
      h('thead', {}, h('tr', {}, ['Lock', 'Slots', 'Token', 'Position', inline && 'Inline limit'].filter(Boolean).map((t) => h('th', {}, t)))),
      h('tbody', {}, claim.locks.map((l) => h('tr', { 'data-lock': lockKey(l) },
        h('td', {}, lockChip(l)), h('td', {}, l.slots),
        h('td', { class: 'token' }, l.token ?? '—'), h('td', { class: 'position' }, l.position ?? '—'),
        inline && h('td', { class: 'inline-limit', title: 'the semaphore is made by its claims\' inline limit while none configures it' },
          l.limit !== undefined ? `limit ${l.limit} (inline)` : '—')))))),
    why.reasons.length > 0 && whoBlocks(why.reasons, blockers, claim),
    h('h2', {}, 'Timeline'),
    ev.error ? refusal(ev.error, 'Reading its events')
      : h('ol', { class: 'timeline', 'aria-label': 'Events of this claim' }, ev.events.map((e) => h('li', { 'data-type': e.type },
        h('time', { datetime: e.time }, clock(e.time)), ' ',
        h('span', { class: 'type' }, e.type), e.reason ? ` — ${e.reason}` : '', byWhom(e, claim), actorOf(e)))));
}

// Who asked for the event (docs/api.md, Actors): a token's name, anonymous,
// or sluice for what the server's rules did on their own.
function actorOf(e) {
  if (!e.actor) return '';
  return h('span', { class: 'actor', 'data-actor': e.actor, title: 'who asked for it' }, ` · ${e.actor}`);
}

// Preemption's and a full queue's reasons do not name the claim that did
// it: the claim's `by` does.
function byWhom(e, c) {
  if (!c.by || !e.reason) return '';
  if (/^preempted by a waiting claim/.test(e.reason)) return h('span', { class: 'by' }, ' (preempted by ', claimLink(c.by), ')');
  if (/^superseded: its lock's queue was full/.test(e.reason)) return h('span', { class: 'by' }, ' (superseded by ', claimLink(c.by), ')');
  return '';
}

function facts(c) {
  const d = durations(c);
  const leaseLeft = c.expires ? Date.parse(c.expires) - Date.now() : null;
  return h('dl', { class: 'card claim-facts facts' },
    fact('State', h('span', { class: 'state', 'data-state': c.state }, c.state), 'state'),
    fact('Holder', holderCell(c.holder), 'holder'),
    fact('Priority', c.priority, 'priority'),
    fact('Created', stamp(c.created), 'created'),
    fact('Arrived', stamp(c.arrived), 'arrived'),
    fact('Granted', c.granted ? stamp(c.granted) : 'not yet', 'granted'),
    c.ended && fact('Ended', stamp(c.ended), 'ended'),
    fact('Waited', `${span(d.waited)}${d.waitLive ? ' so far' : ''}`, 'waited'),
    d.held !== null && fact('Held', `${span(d.held)}${d.heldLive ? ' so far' : ''}`, 'held'),
    c.groups ? fact('Groups', c.groups.map((g, i) => [i ? ', ' : '', h('span', { class: 'group', 'data-group': g.name }, g.name),
      h('span', { class: 'muted' }, ` (cancel ${g.cancel})`)]), 'groups')
      : c.group && fact('Group', c.group, 'group'),
    fact('Lease', c.lease === '0' ? 'none'
      : h('span', {}, c.lease, c.expires ? [', expires ', countdown(c.expires, leaseLeft < LEASE_WARN_MS ? 'lease-warn' : '')] : ''), 'lease'),
    c.revoke_at && fact('Grace ends', countdown(c.revoke_at, 'grace'), 'revoke-at'),
    c.timeout !== '0' && fact('Timeout', c.timeout, 'timeout'),
    fact('Reason', h('span', { class: 'claim-reason' }, c.reason), 'reason'),
    c.by && fact(/^preempted/.test(c.reason) ? 'Preempted by' : 'By', claimLink(c.by), 'by'));
}

// The holders of each lock the claim waits for, a few each; where
// preemption plays a part, which of them are being revoked.
async function holdersOf(reasons) {
  const out = new Map();
  await Promise.all(reasons.map(async (r) => {
    try {
      const [lock, revoking] = await Promise.all([
        api(`${lockApi(r.lock)}?limit=${BLOCKERS}`),
        r.preempt ? api(`/v1/claims?lock=${encodeURIComponent(r.lock)}&state=revoking&limit=${BLOCKERS}`) : null,
      ]);
      lock.revoked = new Map((revoking ? revoking.claims : []).map((c) => [c.id, c]));
      out.set(r.lock, lock);
    } catch (e) {
      if (e instanceof AuthError) throw e;
      out.set(r.lock, { error: e });
    }
  }));
  return out;
}

// Per lock: why it waits (the server's words), its position, the claims
// ahead of it (the first 8 ids /why gives, and how many in all), and the
// claims holding the lock.
function whoBlocks(reasons, blockers, claim) {
  return h('div', { class: 'who-blocks' },
    h('h2', {}, 'Who blocks it'),
    reasons.map((r) => {
      const lock = blockers.get(r.lock);
      return h('article', { class: 'card blocker', 'data-lock': r.lock, 'data-rule': r.rule },
        h('h3', {}, lockLink(r.lock), ' ', h('span', { class: 'badge' }, r.rule), ' ',
          h('span', { class: 'muted' }, `position ${r.position}, ${r.used} of ${r.limit} used`)),
        // The message names its rule and lock already ("at_limit: sem/db has…").
        h('p', { class: 'why' }, r.message),
        r.preempt && h('p', { class: 'preempt', 'data-preempt': r.preempt.status, 'data-holders': r.preempt.holders }, preemptWords(r.preempt, r.rule)),
        r.share && h('p', { class: 'share', 'data-quota': r.share.quota, 'data-held': r.share.held }, shareWords(r.share, claim.rebalance_key)),
        r.rule === 'rate' && rateLine(r),
        h('p', { class: 'ahead', 'data-ahead-count': r.ahead_count },
          r.ahead_count === 0 ? 'No claim is ahead of it here.'
            : [`${r.ahead_count} ahead of it: `, r.ahead.map((id, i) => [i ? ', ' : '', claimLink(id)]),
              r.ahead_count > r.ahead.length ? ` and ${r.ahead_count - r.ahead.length} more` : '']),
        lock && lock.error ? refusal(lock.error, `Reading the holders of ${r.lock}`)
          : lock && h('div', { class: 'blocking-holders' },
            lock.holders_count === 0 ? h('p', { class: 'muted' }, 'Nobody holds it.')
              : [h('p', {}, `Held by ${lock.holders_count}:`),
                h('ul', {}, lock.holders.map((x) => h('li', { 'data-claim': x.claim },
                  claimLink(x.claim), ' ', holderCell(x.holder), h('span', { class: 'muted' }, ` ${x.slots} slot${x.slots > 1 ? 's' : ''}, since ${clock(x.since)}`),
                  x.expires ? [', lease ', countdown(x.expires)] : '',
                  lock.revoked.has(x.claim) && revokedNote(lock.revoked.get(x.claim))))),
                lock.holders_count > lock.holders.length && lockLink(r.lock, `all ${lock.holders_count} holders →`)]));
    }));
}

// A claim's events (up to 1000), read on while a page is partial: the
// server's read stopped at its scan budget (the other claims' events in
// the claim's span count toward it) and more may follow its next.
async function claimEvents(id) {
  const events = [];
  let since = 0;
  while (events.length < 1000) {
    const page = await api(`/v1/events?claim=${encodeURIComponent(id)}&since=${since}&limit=${1000 - events.length}`);
    events.push(...page.events);
    if (!page.partial || page.next <= since) break;
    since = page.next;
  }
  return { events };
}
