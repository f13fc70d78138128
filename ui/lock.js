// lock.js - one lock's page (/locks/sem/NAME, /locks/mtx/NAME): its
// configuration, used of limit, its holders and waiters (the first 100 from
// GET /v1/semaphores/NAME?limit=100, then 100 more at a time through
// GET /v1/claims?lock=KEY&state=...&after=...), the limit form behind a
// confirmation, and charts of its history (GET /v1/history?lock=KEY) when
// the server has that endpoint. Its rules (rules.js): preemption, a bounded
// queue, weights with a shares table (a rebalanced semaphore), a rate,
// backdating; holders being revoked (GET /v1/claims?lock=KEY&state=revoking)
// are marked "preempted by ..." with their end of grace; "clear the queue"
// (DELETE /v1/queue?lock=KEY) behind a confirmation.
import {
  h, api, ApiError, AuthError, ago, clock, level, claimLink, lockKey, lockApi, lockLink, headRow, fact,
  holderCell, countdown, refusal, words, query, withQuery, showError, may,
} from './lib.js';
import { setLimit, clearQueue } from './actions.js';
import { seriesChart, waitHistogram, waitFigures } from './charts.js';
import { ruleFacts, computeShares, sharesTable, revokedNote } from './rules.js';

const FIRST = 100; // holders and waiters read with the lock
const PAGE = 100; // and each "more"
const HISTORY_TTL_MS = 10000; // the history's step: no use asking more often
const SHARE_CLAIMS = 1000; // claims of a rebalanced lock read for its shares table

// Rows loaded with "more", kept across the live redraws of the same lock.
let extra = { key: null };
// The last history answer (or error), per lock and window.
let history = { id: null, at: 0, data: null, error: null };

export function lockRoute(path) {
  const m = path.match(/^\/locks\/(sem|mtx)\/(.+)$/);
  if (!m) return null;
  return `${m[1]}/${m[2].split('/').map(decodeURIComponent).join('/')}`;
}

export async function viewLock(ctx, key) {
  if (extra.key !== key) extra = { key, held: more(), pending: more() };
  const name = key.slice(4);
  const win = query().window === '24h' ? '24h' : '1h';
  let l;
  try {
    l = await api(`${lockApi(key)}?limit=${FIRST}`);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 403)) {
      return h('section', {}, h('h1', {}, key), refusal(e, `Reading ${key}`));
    }
    throw e;
  }
  const pattern = l.kind === 'semaphore' && l.name.endsWith('*');
  const rebalanced = !pattern && l.kind === 'semaphore' && l.strategy === 'rebalanced';
  const [hist, made, revoking, listing] = await Promise.all([
    pattern ? null : readHistory(key, win),
    pattern ? api('/v1/semaphores').then((r) => r.semaphores.filter((s) => s.from_pattern === l.name)).catch(() => []) : null,
    // Holders being revoked (preempted, or by their group's newer claim):
    // the lock's holder entries do not say so, their claims do.
    !pattern && l.holders_count > 0 ? readOr(`/v1/claims?lock=${encodeURIComponent(key)}&state=revoking&limit=${FIRST}`) : null,
    // A rebalanced lock's keys: its claims carry their rebalance_key.
    rebalanced && l.holders_count + l.pending_count > 0 ? readOr(`/v1/claims?lock=${encodeURIComponent(key)}&limit=${SHARE_CLAIMS}`) : null,
  ]);
  const revoked = new Map((revoking && revoking.claims ? revoking.claims : []).map((c) => [c.id, c]));
  return h('section', { 'aria-labelledby': 'lock-title', 'data-lock-page': key },
    h('h1', { id: 'lock-title' }, `${l.kind === 'mutex' ? 'Mutex' : pattern ? 'Pattern' : 'Semaphore'} `, h('code', {}, name)),
    config(ctx, l, pattern),
    pattern ? madeList(made) : [
      rebalanced && shares(l, listing),
      charts(l, hist, win),
      h('h2', {}, `Holders (${l.holders_count})`),
      holdersTable(l, revoked),
      moreButton(ctx, key, 'held', l.holders.length, l.holders_count, 'holders'),
      h('h2', {}, `Waiters (${l.pending_count}), in queue order`),
      waitersTable(l),
      moreButton(ctx, key, 'pending', l.pending.length, l.pending_count, 'waiters'),
      l.pending_count > 0 && may('operate', name) && h('div', { class: 'actions' },
        h('button', {
          type: 'button', class: 'danger', 'data-action': 'clear-queue',
          onclick: async () => { if (await clearQueue(key)) ctx.rerender(); },
        }, 'Clear the queue…'),
        h('span', { class: 'muted' }, `Cancels the ${l.pending_count === 1 ? 'claim' : `${l.pending_count} claims`} waiting for ${key}; the holders keep their slots (the operate permission).`))]);
}

// An answer, or null when it cannot be read (a refusal hides only what it
// would have added).
function readOr(path) {
  return api(path).catch((e) => { if (e instanceof AuthError) throw e; return { error: e }; });
}

function shares(l, listing) {
  const head = h('h2', {}, 'Shares');
  if (!listing) return [head, h('p', { class: 'muted', 'data-shares': 'none' }, 'No key holds or waits: nothing to share.')];
  if (listing.error) return [head, refusal(listing.error, `Reading the claims of sem/${l.name}`)];
  const all = l.holders_count + l.pending_count;
  return h('section', { class: 'shares-section' }, head,
    sharesTable(l, computeShares(l, listing.claims), all > listing.claims.length ? listing.claims.length : 0));
}

function config(ctx, l, pattern) {
  const pct = l.limit > 0 ? Math.min(100, (l.used / l.limit) * 100) : (l.used > 0 ? 100 : 0);
  return h('div', { class: 'card lock-config' },
    h('dl', { class: 'facts' },
      !pattern && fact('Used', h('span', { class: 'used' }, `${l.used} of ${l.limit} slots`), 'used'),
      fact('Limit', l.limit === 0 ? '0 (paused: nothing is granted)' : pattern ? `${l.limit} for each semaphore it matches` : l.limit, 'limit'),
      !pattern && fact('Holding', l.holders_count, 'holders'),
      !pattern && fact('Waiting', l.pending_count, 'pending'),
      l.kind === 'semaphore' && fact('Strategy', l.strategy, 'strategy'),
      l.overtake_limit && fact('Overtake limit', l.overtake_limit, 'overtake'),
      fact('Lease', l.lease === '0' ? 'none' : l.lease, 'lease'),
      !pattern && fact('Last token', l.token, 'token'),
      l.from_pattern && fact('Made from', lockLink(`sem/${l.from_pattern}`, l.from_pattern), 'from'),
      ruleFacts(l, pattern)),
    !pattern && h('div', {
      class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': Math.round(pct),
      'aria-label': `${l.name} utilization`,
    }, h('div', { class: `bar-fill ${l.limit === 0 && l.used > 0 ? 'crit' : level(pct)}`, style: `width: ${pct.toFixed(1)}%` })),
    l.kind === 'semaphore' && !l.inline && may('configure', l.name) && limitForm(ctx, l));
}

function limitForm(ctx, l) {
  const input = h('input', { id: 'lock-limit', type: 'number', min: 0, value: l.limit, 'aria-label': `New limit for ${l.name}` });
  return h('form', {
    class: 'limit-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      if (await setLimit(l.name, Number(input.value))) ctx.rerender();
    },
  }, h('label', { for: 'lock-limit' }, 'Limit'), input, h('button', { type: 'submit' }, 'Set limit…'),
  h('span', { class: 'muted' }, 'Lowering it revokes nobody; 0 pauses.'));
}

function madeList(made) {
  return [h('h2', {}, `Semaphores made from it (${made.length} in use)`),
    made.length === 0 ? h('p', { class: 'muted' }, 'None is in use.')
      : h('ul', { class: 'made-list' }, made.map((s) => h('li', {}, lockLink(lockKey(s), s.name),
        ` — ${s.used} / ${s.limit} used, ${s.pending_count} pending`))),
  ];
}

// ---- history and charts ---------------------------------------------------------

async function readHistory(key, win) {
  const id = `${key}@${win}`;
  if (history.id === id && Date.now() - history.at < HISTORY_TTL_MS) return history;
  try {
    const data = await api(`/v1/history?lock=${encodeURIComponent(key)}&window=${win}`);
    if (!data || !Array.isArray(data.samples)) throw new ApiError(404, 'not_found', 'no history endpoint');
    history = { id, at: Date.now(), data, error: null };
  } catch (e) {
    if (e instanceof AuthError) throw e;
    history = { id, at: Date.now(), data: null, error: e };
  }
  return history;
}

function charts(l, hist, win) {
  const toggle = ['1h', '24h'].map((w) => h('a', {
    href: withQuery(location.pathname, { ...query(), window: w === '1h' ? '' : w }), 'data-link': true,
    class: 'toggle', 'aria-pressed': String(w === win), 'data-window': w,
  }, w === '1h' ? 'Last hour' : 'Last 24 hours'));
  const head = h('div', { class: 'charts-head' }, h('h2', {}, 'History'), h('span', { class: 'toggles', role: 'group', 'aria-label': 'Window' }, toggle));
  if (hist.error) {
    const e = hist.error;
    // A server without the endpoint answers 404 (an unknown path under /v1/).
    const missing = e instanceof ApiError && e.status === 404;
    return h('section', { class: 'charts', 'data-history': missing ? 'missing' : 'error' }, head,
      h('p', { class: 'muted history-note' }, missing
        ? 'No history on this server: it does not record the use of its locks over time (GET /v1/history answers 404).'
        : words(e, 'The history could not be read')));
  }
  const d = hist.data;
  const samples = d.samples || [];
  return h('section', { class: 'charts', 'data-history': 'ok', 'data-step': d.step, 'data-window': d.window }, head,
    d.rebuilding && h('p', { class: 'muted history-note' }, 'The server is rebuilding this history after a restart: the figures may be incomplete.'),
    samples.length === 0 ? h('p', { class: 'muted' }, 'No samples yet.') : h('div', { class: 'chart-row' },
      seriesChart({ samples, key: 'used', label: `Slots used (sample every ${d.step})`, cls: 'used', limit: l.limit }),
      seriesChart({ samples, key: 'pending', label: 'Claims pending (queue length)', cls: 'pending' })),
    d.waits && h('div', { class: 'chart-row waits' }, waitHistogram(d.waits), waitFigures(d.waits)));
}

// ---- holders and waiters ----------------------------------------------------------

function more() {
  return { rows: [], next: null, started: false, done: false };
}

function holderRow(x, revoked) {
  const r = revoked.get(x.claim);
  return h('tr', { 'data-claim': x.claim, 'data-state': r ? 'revoking' : null },
    h('td', { class: 'claim' }, claimLink(x.claim)),
    h('td', { class: 'holder' }, holderCell(x.holder), r && revokedNote(r)),
    h('td', { class: 'slots', 'data-label': 'slots' }, x.slots),
    h('td', { class: 'token', 'data-label': 'token' }, x.token),
    h('td', { class: 'since time', 'data-label': 'held', title: clock(x.since) }, ago(x.since)),
    h('td', { class: 'expires time', 'data-label': 'expires' }, x.expires ? countdown(x.expires) : 'no lease'));
}

function waiterRow(x) {
  return h('tr', { 'data-claim': x.claim },
    h('td', { class: 'position' }, x.position),
    h('td', { class: 'claim' }, claimLink(x.claim)),
    h('td', { class: 'holder' }, holderCell(x.holder)),
    h('td', { class: 'slots', 'data-label': 'slots' }, x.slots),
    h('td', { class: 'priority', 'data-label': 'priority' }, x.priority),
    h('td', { class: 'waiting time', 'data-label': 'waiting', title: clock(x.created) }, ago(x.created)),
    h('td', { class: 'reason' }, x.reason));
}

function holdersTable(l, revoked) {
  if (l.holders_count === 0) return h('p', { class: 'muted' }, 'No holders.');
  const seen = new Set(l.holders.map((x) => x.claim));
  const rows = [...l.holders, ...extra.held.rows.filter((x) => !seen.has(x.claim))];
  return h('div', { class: 'table-wrap stack' }, h('table', { class: 'holders', 'aria-label': `Holders of ${l.name}` },
    headRow(['Claim', 'Holder', 'Slots', 'Token', 'Held for', 'Lease expires']),
    h('tbody', {}, rows.map((x) => holderRow(x, revoked)))));
}

function waitersTable(l) {
  if (l.pending_count === 0) return h('p', { class: 'muted' }, 'No waiters.');
  const seen = new Set(l.pending.map((x) => x.claim));
  const rows = [...l.pending, ...extra.pending.rows.filter((x) => !seen.has(x.claim))];
  return h('div', { class: 'table-wrap stack' }, h('table', { class: 'waiters', 'aria-label': `Waiters for ${l.name}` },
    headRow(['#', 'Claim', 'Holder', 'Slots', 'Priority', 'Waiting', 'Reason']),
    h('tbody', {}, rows.map(waiterRow))));
}

// A claim of /v1/claims?lock=KEY as a row of the holders or waiters table.
function asRow(c, key) {
  const mine = c.locks.find((x) => lockKey(x) === key) || {};
  return {
    claim: c.id, holder: c.holder, slots: mine.slots, token: mine.token, since: c.granted, expires: c.expires,
    position: mine.position, priority: c.priority, created: c.created, reason: c.reason,
  };
}

// "Show 100 more": the next page of /v1/claims?lock=KEY&state=...; the
// listing starts at the lock's first holder (or waiter), so the pages that
// repeat what the lock's GET gave are read through until something new.
function moreButton(ctx, key, st, shown, count, what) {
  const m = extra[st];
  const have = shown + m.rows.length;
  if (count <= shown || m.done) {
    return count > have ? h('p', { class: 'muted' }, `${count - have} more not shown (they changed while paging).`) : null;
  }
  return h('p', { class: 'more' }, h('button', {
    type: 'button', 'data-more': st,
    onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        await loadMore(key, st, new Set([...m.rows.map((x) => x.claim)]), shown);
      } catch (e) {
        if (!(e instanceof AuthError)) showError(words(e, `Reading more ${what}`));
      }
      ctx.rerender();
    },
  }, `Show ${Math.min(PAGE, count - have)} more ${what} (${have} of ${count} shown)`));
}

async function loadMore(key, st, seen, shown) {
  const m = extra[st];
  let added = 0;
  let skipped = 0;
  while (added === 0 && !m.done) {
    const after = m.next ? `&after=${encodeURIComponent(m.next)}` : '';
    const page = await api(`/v1/claims?lock=${encodeURIComponent(key)}&state=${st === 'held' ? 'held' : 'pending'}&limit=${PAGE}${after}`);
    for (const c of page.claims) {
      // The first `shown` entries of the listing are the ones the lock's GET gave.
      if (!m.started && skipped < shown) { skipped++; continue; }
      if (seen.has(c.id)) continue;
      seen.add(c.id);
      m.rows.push(asRow(c, key));
      added++;
    }
    m.next = page.next || null;
    if (!m.next) m.done = true;
    if (skipped >= shown) m.started = true;
  }
}
