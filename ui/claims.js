// claims.js - the claims page (/claims: live and ended claims with their
// outcome and durations, filtered by the server) and the queue (/queue:
// pending claims in the total order). Both read one page at a time with the
// server's cursor (limit, after, next), kept in the URL, so that a queue of
// 100 000 claims costs one page, not the whole listing.
import {
  h, api, ApiError, AuthError, ago, stamp, span, claimLink, lockChip, headRow, holderCell, durations,
  query, withQuery, refusal,
} from './lib.js';

const CLAIMS_PAGE = 50;
const QUEUE_PAGE = 100;
const STATES = ['pending', 'held', 'revoking', 'released', 'withdrawn', 'expired', 'timed_out', 'superseded', 'canceled'];

// ?limit= in the page's URL, within the server's bounds.
function pageSize(dflt) {
  const n = Number(query().limit);
  return Number.isInteger(n) && n >= 1 && n <= 10000 ? n : dflt;
}

// The links under a page: the first page, and the next one when the server
// says entries may remain.
function pager(path, q, next, shown) {
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    q.after && h('a', { href: withQuery(path, { ...q, after: '' }), 'data-link': true, class: 'first' }, '← First page'),
    h('span', { class: 'muted' }, `${shown} on this page`),
    next && h('a', { href: withQuery(path, { ...q, after: next }), 'data-link': true, class: 'next', rel: 'next' }, 'Next page →'));
}

// ---- claims -------------------------------------------------------------------------

export async function viewClaims(ctx) {
  const q = query();
  const limit = pageSize(CLAIMS_PAGE);
  const filters = { state: q.state || '', holder: q.holder || '', lock: q.lock || '', run: q.run || '' };
  let page;
  try {
    // Newest first, what an operator looks for; a lock's listing has its own
    // order (holders, then waiters), which the server keeps.
    const order = filters.lock ? '' : 'newest';
    page = await api(withQuery('/v1/claims', { ...filters, order, limit, after: q.after || '' }));
  } catch (e) {
    if (e instanceof AuthError) throw e;
    if (!(e instanceof ApiError)) throw e;
    return h('section', {}, h('h1', { id: 'claims-title' }, 'Claims'), filterForm(ctx, filters), refusal(e, 'Listing the claims'));
  }
  return h('section', { 'aria-labelledby': 'claims-title' },
    h('h1', { id: 'claims-title' }, 'Claims'),
    h('p', { class: 'muted' }, filters.lock
      ? 'The lock\'s holders, then its waiters in queue order, live and ended (ended ones are kept for an hour).'
      : 'Live and ended claims (ended ones are kept for an hour), newest first.'),
    filterForm(ctx, filters),
    page.claims.length === 0 ? h('p', { class: 'muted', 'data-empty': 'claims' }, 'No claim matches.')
      : claimsTable(page.claims),
    pager('/claims', { ...filters, limit: q.limit || '', after: q.after || '' }, page.next, page.claims.length));
}

function filterForm(ctx, f) {
  const field = (name, label, attrs = {}) => h('label', {}, label, h('input', { name, value: f[name], ...attrs }));
  return h('form', {
    class: 'filters', 'aria-label': 'Filter claims',
    // Changed and not yet applied: app.js holds the redraws that would reset it.
    oninput: (ev) => { ev.currentTarget.dataset.edited = 'true'; },
    onchange: (ev) => { ev.currentTarget.dataset.edited = 'true'; },
    onsubmit: (ev) => {
      ev.preventDefault();
      const data = Object.fromEntries(new FormData(ev.target));
      ctx.navigate(withQuery('/claims', { ...data, limit: query().limit || '' }));
    },
  },
  h('label', {}, 'State', h('select', { name: 'state' },
    h('option', { value: '' }, 'any'),
    STATES.map((s) => h('option', { value: s, selected: s === f.state }, s)))),
  field('holder', 'Holder', { placeholder: 'exact holder' }),
  field('lock', 'Lock', { placeholder: 'sem/NAME or mtx/NAME' }),
  field('run', 'Run', { placeholder: 'RUN (holders RUN/…)' }),
  h('button', { type: 'submit' }, 'Filter'),
  h('a', { href: '/claims', 'data-link': true }, 'Clear'));
}

// How long it waited and held, as figures that still grow for a live claim.
export function durationCells(c) {
  const d = durations(c);
  return [
    h('td', { class: 'waited time', 'data-label': 'waited', 'data-ms': d.waited },
      span(d.waited), d.waitLive ? h('span', { class: 'muted' }, ' so far') : ''),
    h('td', { class: 'held time', 'data-label': 'held', 'data-ms': d.held ?? '' },
      d.held === null ? '—' : [span(d.held), d.heldLive ? h('span', { class: 'muted' }, ' so far') : '']),
  ];
}

export function claimsTable(claims) {
  return h('div', { class: 'table-wrap stack' }, h('table', { class: 'claims', 'aria-label': 'Claims' },
    headRow(['Claim', 'Holder', 'State', 'Locks', 'Arrived', 'Waited', 'Held', 'Outcome or reason']),
    h('tbody', {}, claims.map((c) => h('tr', { 'data-claim': c.id, 'data-state': c.state },
      h('td', { class: 'claim' }, claimLink(c.id)),
      h('td', { class: 'holder' }, holderCell(c.holder)),
      h('td', { class: 'state', 'data-state': c.state }, c.state),
      h('td', { class: 'locks' }, c.locks.map(lockChip)),
      h('td', { class: 'arrived time', 'data-label': 'arrived' }, stamp(c.arrived)),
      durationCells(c),
      h('td', { class: 'reason' }, c.reason))))));
}

// ---- queue ----------------------------------------------------------------------------

export async function viewQueue() {
  const q = query();
  const limit = pageSize(QUEUE_PAGE);
  const [page, status] = await Promise.all([
    api(withQuery('/v1/queue', { limit, after: q.after || '' })),
    api('/v1/status').catch((e) => { if (e instanceof AuthError) throw e; return null; }),
  ]);
  const total = status && status.claims ? status.claims.pending : null;
  const first = page.queue.length ? page.queue[0].position : 0;
  return h('section', { 'aria-labelledby': 'queue-title' },
    h('h1', { id: 'queue-title' }, `Queue (${total ?? page.queue.length} pending)`),
    page.queue.length > 0 && h('p', { class: 'muted' },
      `Positions ${first} to ${first + page.queue.length - 1}${total !== null ? ` of ${total}` : ''}, in queue order.`),
    page.queue.length === 0 ? h('p', { class: 'muted' }, 'No claim is waiting.')
      : h('div', { class: 'table-wrap stack' }, h('table', { class: 'queue', 'aria-label': 'Pending claims in queue order' },
        headRow(['#', 'Claim', 'Holder', 'Priority', 'Waiting', 'Locks', 'Blocked because']),
        h('tbody', {}, page.queue.map((c) => h('tr', { 'data-claim': c.id },
          h('td', { class: 'position' }, c.position),
          h('td', { class: 'claim' }, claimLink(c.id)),
          h('td', { class: 'holder' }, holderCell(c.holder)),
          h('td', { class: 'priority', 'data-label': 'priority' }, c.priority),
          h('td', { class: 'waiting time', 'data-label': 'waiting' }, ago(c.arrived || c.created)),
          h('td', { class: 'locks' }, c.locks.map(lockChip)),
          h('td', { class: 'reason', 'data-rule': c.rule }, c.reason)))))),
    pager('/queue', { limit: q.limit || '', after: q.after || '' }, page.next, page.queue.length));
}
