// overview.js - the overview ("/"): every lock, busiest first, as cards or
// as a compact table, filtered by name or namespace. The filter and the view
// are kept in the URL (?q=, ?view=table) so that they survive a reload and
// the back button.
//
// Every figure is the server's: the listings carry holders_count and
// pending_count, /v1/status the totals. The page never downloads the queue
// or the claims listing (100 000 pending claims are megabytes, and this page
// is redrawn on every event): the busiest cards read their first holders and
// waiters with GET /v1/semaphores/NAME?limit=3.
import {
  h, api, AuthError, ago, level, claimLink, lockKey, lockApi, lockLink, lockHref, query, withQuery,
} from './lib.js';
import { setLimit } from './actions.js';
import { ruleBadges } from './rules.js';

const PEEK_CARDS = 12; // busy cards that show their first holders and waiters
const PEEK_ROWS = 3;

const plural = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;
const isPattern = (l) => l.kind === 'semaphore' && l.name.endsWith('*');

// How busy a lock is, for the order: waiters first, then the share of the
// limit in use (a paused lock with holders counts as full).
function load(l) {
  if (isPattern(l)) return -1;
  if (l.limit === 0) return l.used > 0 ? 2 : 0;
  return l.used / l.limit;
}

export function busiestFirst(a, b) {
  return (b.pending_count - a.pending_count) || (load(b) - load(a)) || a.name.localeCompare(b.name)
    || a.kind.localeCompare(b.kind);
}

// The filter: "team-a/" (ending in '/') is a namespace prefix; anything else
// a substring of the name. Either may start with sem/ or mtx/.
export function matches(l, q) {
  if (!q) return true;
  const key = lockKey(l).toLowerCase();
  const name = l.name.toLowerCase();
  const f = q.toLowerCase();
  if (f.endsWith('/')) return name.startsWith(f) || key.startsWith(f);
  return name.includes(f) || key.includes(f);
}

// Namespaces (the first segment of the names) offered by the filter box.
function namespaces(locks) {
  const ns = new Set();
  for (const l of locks) {
    const i = l.name.indexOf('/');
    if (i > 0) ns.add(l.name.slice(0, i + 1));
  }
  return [...ns].sort();
}

export async function viewOverview(ctx) {
  const q = query();
  const filter = q.q || '';
  const table = q.view === 'table';
  const [sems, mtxs, status] = await Promise.all([
    api('/v1/semaphores'), api('/v1/mutexes'),
    api('/v1/status').catch((e) => { if (e instanceof AuthError) throw e; return null; }),
  ]);
  const all = [
    ...sems.semaphores,
    ...mtxs.mutexes.filter((m) => m.holders_count > 0 || m.pending_count > 0),
  ];
  const shown = all.filter((l) => matches(l, filter)).sort(busiestFirst);
  const made = new Map(); // pattern -> the semaphores made from it
  for (const s of sems.semaphores) {
    if (s.from_pattern) made.set(s.from_pattern, [...(made.get(s.from_pattern) || []), s]);
  }
  const peeks = table ? new Map() : await peek(shown);
  const real = sems.semaphores.filter((s) => !isPattern(s));
  const used = real.reduce((n, s) => n + s.used, 0);
  const total = real.reduce((n, s) => n + s.limit, 0);
  const claims = status && status.claims;
  return h('section', { 'aria-labelledby': 'pools-title' },
    h('h1', { id: 'pools-title' }, 'Pools and locks'),
    h('div', { class: 'summary' },
      figure('locks', all.length, 'Locks'),
      figure('busy', all.filter((l) => l.holders_count + l.pending_count > 0).length, 'Busy locks'),
      figure('slots', `${used} / ${total}`, 'Slots used'),
      figure('held', claims ? claims.held : '—', 'Held claims'),
      figure('pending', claims ? claims.pending : '—', 'Pending claims')),
    toolbar(ctx, all, shown, filter, table),
    all.length === 0
      ? h('p', { class: 'muted' }, 'No semaphores are configured and no mutex is busy.')
      : shown.length === 0 ? h('p', { class: 'muted', 'data-empty': 'filter' }, `No lock matches “${filter}”.`)
        : table ? locksTable(shown, made)
          : h('div', { class: 'cards' }, shown.map((l) => lockCard(ctx, l, peeks.get(lockKey(l)), made.get(l.name)))));
}

function figure(id, n, label) {
  return h('div', { class: 'figure', 'data-figure': id }, h('span', { class: 'n' }, n), label);
}

// The filter box and the cards/table switch. Typing filters as you go: the
// URL is replaced (not pushed) on each key, and app.js keeps the focus and
// the caret in the box across the redraw.
function toolbar(ctx, all, shown, filter, table) {
  const q = query();
  const input = h('input', {
    id: 'filter', type: 'search', value: filter, list: 'namespaces', placeholder: 'name, or namespace/',
    'aria-label': 'Filter locks by name or namespace', 'data-live-input': true, autocomplete: 'off',
    oninput: (ev) => {
      history.replaceState(null, '', withQuery('/', { ...query(), q: ev.target.value }));
      ctx.rerender();
    },
  });
  const link = (v, text) => h('a', {
    href: withQuery('/', { ...q, view: v === 'table' ? 'table' : '' }), 'data-link': true,
    class: 'toggle', 'aria-pressed': String(table === (v === 'table')), 'data-view': v,
  }, text);
  return h('div', { class: 'toolbar' },
    h('label', { for: 'filter' }, 'Filter'), input,
    h('datalist', { id: 'namespaces' }, namespaces(all).map((n) => h('option', { value: n }))),
    h('span', { class: 'muted count', 'data-count': shown.length }, `${shown.length} of ${all.length} shown, busiest first`),
    h('span', { class: 'toggles', role: 'group', 'aria-label': 'View' }, link('cards', 'Cards'), link('table', 'Table')));
}

// The first holders and waiters of the busiest cards shown, PEEK_ROWS of
// each, one small GET per lock.
async function peek(locks) {
  const busy = locks.filter((l) => !isPattern(l) && l.holders_count + l.pending_count > 0).slice(0, PEEK_CARDS);
  const out = new Map();
  await Promise.all(busy.map(async (l) => {
    try {
      out.set(lockKey(l), await api(`${lockApi(lockKey(l))}?limit=${PEEK_ROWS}`));
    } catch (e) {
      if (e instanceof AuthError) throw e;
    }
  }));
  return out;
}

function bar(l) {
  const paused = l.limit === 0;
  const pct = l.limit > 0 ? Math.min(100, (l.used / l.limit) * 100) : (l.used > 0 ? 100 : 0);
  const lv = paused && l.used > 0 ? 'crit' : level(pct);
  return h('div', {
    class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100,
    'aria-valuenow': Math.round(pct), 'aria-label': `${l.name} utilization`,
  }, h('div', { class: `bar-fill ${lv}`, style: `width: ${pct.toFixed(1)}%` }));
}

function badges(l) {
  return [
    h('span', { class: 'badge' }, l.kind),
    isPattern(l) && h('span', { class: 'badge pattern' }, 'pattern'),
    l.from_pattern && h('span', { class: 'badge pattern', title: 'made from a pattern' }, `from ${l.from_pattern}`),
    !isPattern(l) && l.limit === 0 && h('span', { class: 'badge paused' }, 'paused'),
    l.pending_count > 0 && h('span', { class: 'badge pending', 'data-pending': l.pending_count }, `${l.pending_count} pending`),
    // Its rules: preempts, a bounded queue (full or not), a rate, weights, inline.
    ruleBadges(l),
  ];
}

function lockCard(ctx, l, detail, made) {
  const key = lockKey(l);
  const pattern = isPattern(l);
  const card = h('article', { class: `card${pattern ? ' pattern-card' : ''}`, 'data-lock': key, 'aria-label': `${l.kind} ${l.name}` },
    h('div', { class: 'card-head' }, h('span', { class: 'card-name' }, lockLink(key, l.name)), badges(l)),
    pattern ? patternBody(l, made) : [
      bar(l),
      h('div', { class: 'card-meta' },
        h('span', { class: 'used' }, `${l.used} / ${l.limit} used`),
        h('span', { class: 'holders-count' }, `${l.holders_count} holding`),
        l.kind === 'semaphore' && h('span', { class: 'strategy' }, `strategy ${l.strategy}`),
        l.lease && l.lease !== '0' && h('span', {}, `lease ${l.lease}`),
        h('span', {}, `token ${l.token}`)),
      detail && peekLists(l, detail)]);
  if (l.kind === 'semaphore' && !l.from_pattern && !l.inline) card.append(limitForm(ctx, l));
  return card;
}

// A pattern is no lock of its own: its limit applies to each semaphore made
// from it, and those in use are listed (the listing's from_pattern).
function patternBody(l, made = []) {
  const busy = made.filter((s) => s.holders_count + s.pending_count > 0);
  return [
    h('p', { class: 'pattern-limit' }, `Each semaphore matching ${l.name} gets a limit of ${l.limit}`,
      l.lease !== '0' ? ` and a lease of ${l.lease}` : '', `, strategy ${l.strategy}.`),
    h('p', { class: 'made', 'data-made': made.length },
      made.length === 0 ? 'No semaphore made from it is in use.'
        : [`${made.length} in use (${plural(busy.reduce((n, s) => n + s.used, 0), 'slot')} held, `,
          `${busy.reduce((n, s) => n + s.pending_count, 0)} pending): `,
          made.slice(0, 8).map((s, i) => [i ? ', ' : '', lockLink(lockKey(s), s.name)]),
          made.length > 8 ? ` and ${made.length - 8} more` : '']),
  ];
}

// The first holders and waiters of a busy card, and a link to the rest.
function peekLists(l, d) {
  const key = lockKey(l);
  return h('div', { class: 'peek' },
    d.holders.length > 0 && h('ul', { class: 'peek-holders', 'aria-label': `First holders of ${l.name}` },
      d.holders.map((x) => h('li', { 'data-claim': x.claim },
        claimLink(x.claim), ' ', h('span', { class: 'holder' }, x.holder),
        h('span', { class: 'muted time' }, ` held ${ago(x.since)}`)))),
    d.pending.length > 0 && h('ul', { class: 'peek-waiters', 'aria-label': `First waiters for ${l.name}` },
      d.pending.map((x) => h('li', { 'data-claim': x.claim },
        h('span', { class: 'muted' }, `#${x.position} `), claimLink(x.claim), ' ', h('span', { class: 'holder' }, x.holder),
        h('span', { class: 'muted time' }, ` waiting ${ago(x.created)}`),
        h('div', { class: 'reason muted' }, x.reason)))),
    h('a', { href: lockHref(key), 'data-link': true, class: 'more-link' },
      `All ${plural(d.holders_count, 'holder')} and ${plural(d.pending_count, 'waiter')} →`));
}

function limitForm(ctx, l) {
  const id = `limit-${lockKey(l).replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const input = h('input', { id, type: 'number', min: 0, value: l.limit, 'aria-label': `New limit for ${l.name}` });
  return h('form', {
    class: 'limit-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      if (await setLimit(l.name, Number(input.value))) ctx.rerender();
    },
  }, h('label', { for: id }, 'Limit'), input, h('button', { type: 'submit' }, 'Set limit…'));
}

// The compact view: one row per lock, every column visible at 1400 px.
function locksTable(locks, made) {
  const row = (l) => {
    const key = lockKey(l);
    const pattern = isPattern(l);
    return h('tr', { 'data-lock': key },
      h('td', { class: 'name' }, lockLink(key, l.name), ' ', badges(l).slice(1)),
      h('td', { class: 'kind', 'data-label': 'kind' }, l.kind),
      h('td', { class: 'use', 'data-label': 'used' }, pattern ? `${l.limit} per semaphore` : [h('span', { class: 'used' }, `${l.used} / ${l.limit}`), bar(l)]),
      h('td', { class: 'holders-count', 'data-label': 'holding' }, pattern ? `${(made.get(l.name) || []).length} made` : l.holders_count),
      h('td', { class: 'pending-count', 'data-label': 'pending' }, l.pending_count),
      h('td', { class: 'strategy', 'data-label': 'strategy' }, l.strategy),
      h('td', { class: 'lease', 'data-label': 'lease' }, l.lease === '0' ? '—' : l.lease),
      h('td', { class: 'token', 'data-label': 'token' }, l.token));
  };
  return h('div', { class: 'table-wrap stack' }, h('table', { class: 'locks', 'aria-label': 'Locks, busiest first' },
    h('thead', {}, h('tr', {}, ['Lock', 'Kind', 'Used', 'Holding', 'Pending', 'Strategy', 'Lease', 'Token'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, locks.map(row))));
}
