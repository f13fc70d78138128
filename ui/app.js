// app.js - the sluice dashboard: a client-side router for "/", "/queue" and
// "/claims/{id}", an API client that sends the token kept in sessionStorage,
// and a live feed of the event stream that redraws the page on each event.
//
// The event stream is read with fetch() rather than EventSource, because
// EventSource cannot send an Authorization header; fetch streams the body and
// this file parses the "id:"/"data:" lines itself. When the stream is down
// the page refreshes every 5 s and the stream is retried.

const TOKEN_KEY = 'sluice.token';
const POLL_MS = 5000;
const LEASE_WARN_MS = 10000; // a lease this close to running out is shown in red
const FEED_MAX = 100;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  open: new Set(), // expanded cards, by lock key ("sem/db")
  lastSeq: 0,
  live: false,
  redrawTimer: null,
  pollTimer: null,
  streamAbort: null,
  rendering: false,
  again: false,
  deferred: false, // a redraw waits for a field to lose focus
};

class AuthError extends Error {}

// ---- small helpers ---------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    // Through the CSSOM: the Content-Security-Policy forbids style attributes.
    else if (k === 'style') el.style.cssText = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const enc = (name) => name.split('/').map(encodeURIComponent).join('/');

function ago(iso) {
  if (!iso) return '';
  return span(Date.now() - Date.parse(iso));
}

function span(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

function clock(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// Utilization colour: green under 60 %, yellow 60 to 85 %, red above.
export function level(pct) {
  if (pct > 85) return 'crit';
  if (pct >= 60) return 'warn';
  return 'ok';
}

// A claim id is 22 characters: 8 of creation time (base64 that sorts), then 14
// random. The short label is the last 8, from the random part: claims made in
// the same millisecond share their first 8. The title keeps the full id.
function shortId(id) {
  return id.slice(-8);
}

function claimLink(id) {
  return h('a', { href: `/claims/${encodeURIComponent(id)}`, 'data-link': true, title: id }, shortId(id));
}

function lockChip(l) {
  const kind = l.kind === 'mutex' ? 'mtx' : 'sem';
  const slots = l.slots > 1 ? ` ×${l.slots}` : '';
  return h('span', { class: 'chip', title: `${l.kind} ${l.name}` }, `${kind}/${l.name}${slots}`);
}

// ---- API client ------------------------------------------------------------

function headers(extra = {}) {
  const hd = { ...extra };
  if (state.token) hd.Authorization = `Bearer ${state.token}`;
  return hd;
}

async function api(path, opts = {}) {
  const res = await fetch(path, {
    ...opts,
    headers: headers(opts.body ? { 'Content-Type': 'application/json' } : {}),
  });
  if (res.status === 401) {
    showAuthPrompt(state.token ? 'The token was refused: enter a valid API token.'
      : 'This server needs a token: enter an API token above.');
    throw new AuthError('unauthorized');
  }
  const body = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const msg = body && body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${res.status}`;
    const err = new Error(msg);
    err.status = res.status;
    throw err;
  }
  hideAuthPrompt();
  return body;
}

// Every entry of a listing that comes a page at a time (docs/api.md,
// "Listings a page at a time"): follows `next` until the listing is complete.
async function apiAll(path, key) {
  const sep = path.includes('?') ? '&' : '?';
  let all = [];
  let after = null;
  for (;;) {
    const page = await api(`${path}${sep}limit=10000${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    all = all.concat(page[key]);
    if (!page.next) return all;
    after = page.next;
  }
}

function showAuthPrompt(text) {
  const el = document.getElementById('auth-prompt');
  el.textContent = text;
  el.hidden = false;
  document.getElementById('token').focus();
}

function hideAuthPrompt() {
  document.getElementById('auth-prompt').hidden = true;
}

function showError(text) {
  const el = document.getElementById('error');
  el.textContent = text || '';
  el.hidden = !text;
}

// ---- router ----------------------------------------------------------------

function route() {
  const p = location.pathname;
  if (p === '/queue') return { name: 'queue', view: viewQueue };
  const m = p.match(/^\/claims\/([^/]+)$/);
  if (m) return { name: 'claim', view: () => viewClaim(decodeURIComponent(m[1])) };
  return { name: 'pools', view: viewPools };
}

function navigate(href) {
  history.pushState(null, '', href);
  render(true);
}

// Draws the current page. Called on navigation, on each event (debounced)
// and by the poller; a call that arrives while drawing runs once after it.
async function render(focus = false) {
  if (state.rendering) {
    state.again = true;
    return;
  }
  // Redrawing would replace a field the user is typing in (a card's limit):
  // wait until it loses focus.
  if (!focus && typing()) {
    defer();
    return;
  }
  state.rendering = true;
  const r = route();
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === r.name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = document.getElementById('view');
  try {
    const node = await r.view();
    // The user may have started typing while the view's data was on its way:
    // drop this draw rather than replace the field under their fingers.
    if (!focus && typing()) {
      defer();
      return;
    }
    main.replaceChildren(node);
    showError('');
    document.body.dataset.rendered = String(Date.now());
    if (focus) main.focus({ preventScroll: true });
  } catch (e) {
    if (!(e instanceof AuthError)) showError(e.message);
    else main.replaceChildren(h('p', { class: 'muted' }, 'Waiting for a token.'));
  } finally {
    state.rendering = false;
  }
  if (state.again) {
    state.again = false;
    render();
  }
}

// A field of the page (a card's limit) has the focus.
function typing() {
  const el = document.activeElement;
  return el && el.tagName === 'INPUT' && el.closest('#view');
}

// The page is not redrawn until the field loses focus (body[data-deferred]
// says so while it lasts).
function defer() {
  state.deferred = true;
  state.again = false; // the redraw on focusout covers it
  document.body.dataset.deferred = 'true';
}

function scheduleRender() {
  clearTimeout(state.redrawTimer);
  state.redrawTimer = setTimeout(() => render(), 100);
}

// ---- Pools and locks -------------------------------------------------------

// The pending figure is /v1/status's count (the leader's whole queue, from
// whichever server serves the page): the queue listing can be megabytes,
// and this page is redrawn on every event.
async function viewPools() {
  const [sems, mtxs, health] = await Promise.all([
    api('/v1/semaphores'), api('/v1/mutexes'),
    api('/v1/status').catch((e) => { if (e instanceof AuthError) throw e; return null; }),
  ]);
  const locks = [
    ...sems.semaphores.map((s) => ({ ...s, key: `sem/${s.name}` })),
    ...mtxs.mutexes.filter((m) => m.holders_count > 0 || m.pending_count > 0)
      .map((m) => ({ ...m, key: `mtx/${m.name}` })),
  ];
  const real = sems.semaphores.filter((s) => !s.name.endsWith('*'));
  const used = real.reduce((n, s) => n + s.used, 0);
  const total = real.reduce((n, s) => n + s.limit, 0);
  const details = new Map();
  await Promise.all(locks.filter((l) => state.open.has(l.key)).map(async (l) => {
    const path = l.kind === 'mutex' ? '/v1/mutexes/' : '/v1/semaphores/';
    try { details.set(l.key, await api(path + enc(l.name))); } catch (e) { if (e instanceof AuthError) throw e; }
  }));
  return h('section', { 'aria-labelledby': 'pools-title' },
    h('h1', { id: 'pools-title' }, 'Pools and locks'),
    h('div', { class: 'summary' },
      figure('locks', locks.length, 'Locks'),
      figure('slots', `${used} / ${total}`, 'Slots used'),
      figure('pending', health && health.claims ? health.claims.pending : '—', 'Pending claims')),
    locks.length === 0
      ? h('p', { class: 'muted' }, 'No semaphores are configured and no mutex is busy.')
      : h('div', { class: 'cards' }, locks.map((l) => lockCard(l, details.get(l.key)))));
}

function figure(id, n, label) {
  return h('div', { class: 'figure', 'data-figure': id }, h('span', { class: 'n' }, n), label);
}

function lockCard(l, detail) {
  const pattern = l.kind === 'semaphore' && l.name.endsWith('*');
  const paused = l.limit === 0;
  const pct = l.limit > 0 ? Math.min(100, (l.used / l.limit) * 100) : (l.used > 0 ? 100 : 0);
  const lv = paused && l.used > 0 ? 'crit' : level(pct);
  const card = h('article', {
    class: 'card', 'data-lock': l.key, 'aria-label': `${l.kind} ${l.name}`,
  },
  h('div', { class: 'card-head' },
    h('span', { class: 'card-name' }, l.name),
    h('span', { class: 'badge' }, l.kind),
    pattern && h('span', { class: 'badge pattern' }, 'pattern'),
    l.from_pattern && h('span', { class: 'badge pattern', title: 'made from a pattern' }, `from ${l.from_pattern}`),
    paused && h('span', { class: 'badge paused' }, 'paused'),
    l.pending_count > 0 && h('span', { class: 'badge pending', 'data-pending': l.pending_count },
      `${l.pending_count} pending`)),
  pattern
    ? h('p', { class: 'muted' }, `Each semaphore matching this pattern gets a limit of ${l.limit}.`)
    : h('div', {
      class: 'bar', role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100,
      'aria-valuenow': Math.round(pct), 'aria-label': `${l.name} utilization`,
    }, h('div', { class: `bar-fill ${lv}`, style: `width: ${pct.toFixed(1)}%` })),
  h('div', { class: 'card-meta' },
    h('span', { class: 'used' }, `${l.used} / ${l.limit} used`),
    l.kind === 'semaphore' && h('span', { class: 'strategy' }, `strategy ${l.strategy}`),
    l.lease && l.lease !== '0' && h('span', {}, `lease ${l.lease}`),
    h('span', {}, `token ${l.token}`)));
  if (!pattern) {
    const det = h('details', {
      ontoggle: (ev) => {
        if (ev.target.open) state.open.add(l.key); else state.open.delete(l.key);
        if (ev.target.open && !detail) scheduleRender();
      },
    }, h('summary', {}, `Holders (${l.holders_count}) and waiters (${l.pending_count})`));
    if (state.open.has(l.key)) det.open = true;
    if (detail) det.append(h('div', { class: 'card-tables stack' }, holdersTable(detail), waitersTable(detail)));
    else if (det.open) det.append(h('p', { class: 'muted' }, 'Loading…'));
    card.append(det);
  }
  if (l.kind === 'semaphore' && !l.from_pattern) card.append(limitForm(l));
  return card;
}

// A table's header cells, and the label each cell carries for the narrow
// layout (style.css: a table in a narrow .stack shows each row as a block,
// the cells labelled from data-label).
function headRow(labels) {
  return h('thead', {}, h('tr', {}, labels.map((t) => h('th', { scope: 'col' }, t))));
}

function holdersTable(d) {
  if (d.holders.length === 0) return h('p', { class: 'muted' }, 'No holders.');
  const now = Date.now();
  return h('div', { class: 'table-wrap' }, h('table', { class: 'holders', 'aria-label': `Holders of ${d.name}` },
    h('caption', {}, 'Holders'),
    headRow(['Claim', 'Holder', 'Slots', 'Token', 'Held for', 'Lease expires']),
    h('tbody', {}, d.holders.map((x) => {
      const left = x.expires ? Date.parse(x.expires) - now : null;
      const warn = left !== null && left < LEASE_WARN_MS;
      return h('tr', { 'data-claim': x.claim },
        h('td', { class: 'claim' }, claimLink(x.claim)),
        h('td', { class: 'holder' }, x.holder),
        h('td', { class: 'slots', 'data-label': 'slots' }, x.slots),
        h('td', { class: 'token', 'data-label': 'token' }, x.token),
        h('td', { class: 'since time', 'data-label': 'held', title: clock(x.since) }, ago(x.since)),
        h('td', { class: `expires time${warn ? ' lease-warn' : ''}`, 'data-label': 'expires' },
          x.expires ? `${clock(x.expires)} (${left > 0 ? 'in ' + span(left) : 'due'})` : 'none'));
    }))));
}

function waitersTable(d) {
  if (d.pending.length === 0) return h('p', { class: 'muted' }, 'No waiters.');
  return h('div', { class: 'table-wrap' }, h('table', { class: 'waiters', 'aria-label': `Waiters for ${d.name}` },
    h('caption', {}, 'Waiters, in queue order'),
    headRow(['#', 'Claim', 'Holder', 'Slots', 'Priority', 'Waiting', 'Reason']),
    h('tbody', {}, d.pending.map((x) => h('tr', { 'data-claim': x.claim },
      h('td', { class: 'position' }, x.position),
      h('td', { class: 'claim' }, claimLink(x.claim)),
      h('td', { class: 'holder' }, x.holder),
      h('td', { class: 'slots', 'data-label': 'slots' }, x.slots),
      h('td', { class: 'priority', 'data-label': 'priority' }, x.priority),
      h('td', { class: 'waiting time', 'data-label': 'waiting', title: clock(x.created) }, ago(x.created)),
      h('td', { class: 'reason' }, x.reason))))));
}

function limitForm(l) {
  const id = `limit-${l.key.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const input = h('input', {
    id, type: 'number', min: 0, value: l.limit, 'aria-label': `New limit for ${l.name}`,
  });
  return h('form', {
    class: 'limit-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      const limit = Number(input.value);
      if (!Number.isInteger(limit) || limit < 0) {
        showError('The limit must be a whole number, 0 or more (0 pauses the semaphore).');
        return;
      }
      try {
        await api(`/v1/semaphores/${enc(l.name)}`, {
          method: 'PUT',
          // The other values as they are: a PUT sets them all.
          body: JSON.stringify({ limit, strategy: l.strategy, lease: l.lease,
            ...(l.overtake_limit !== undefined ? { overtake_limit: l.overtake_limit } : {}) }),
        });
        render();
      } catch (e) {
        if (!(e instanceof AuthError)) showError(`Changing the limit of ${l.name}: ${e.message}`);
      }
    },
  }, h('label', { for: id }, 'Limit'), input, h('button', { type: 'submit' }, 'Set limit'));
}

// ---- Queue -----------------------------------------------------------------

async function viewQueue() {
  const queue = await apiAll('/v1/queue', 'queue');
  return h('section', { 'aria-labelledby': 'queue-title' },
    h('h1', { id: 'queue-title' }, `Queue (${queue.length} pending)`),
    queue.length === 0 ? h('p', { class: 'muted' }, 'No claim is waiting.')
      : h('div', { class: 'table-wrap stack' }, h('table', { class: 'queue', 'aria-label': 'Pending claims in queue order' },
        headRow(['#', 'Claim', 'Holder', 'Priority', 'Waiting', 'Locks', 'Blocked because']),
        h('tbody', {}, queue.map((c) => h('tr', { 'data-claim': c.id },
          h('td', { class: 'position' }, c.position),
          h('td', { class: 'claim' }, claimLink(c.id)),
          h('td', { class: 'holder' }, c.holder),
          h('td', { class: 'priority', 'data-label': 'priority' }, c.priority),
          h('td', { class: 'waiting time', 'data-label': 'waiting' }, ago(c.arrived || c.created)),
          h('td', { class: 'locks' }, c.locks.map(lockChip)),
          h('td', { class: 'reason', 'data-rule': c.rule }, c.reason)))))));
}

// ---- Claim -----------------------------------------------------------------

async function viewClaim(id) {
  const path = `/v1/claims/${encodeURIComponent(id)}`;
  let claim;
  try {
    claim = await api(path);
  } catch (e) {
    if (e.status === 404) return h('section', {}, h('h1', {}, 'Claim not found'),
      h('p', {}, `No claim ${id} (ended claims are kept for an hour).`));
    throw e;
  }
  const [why, ev] = await Promise.all([
    claim.state === 'pending' ? api(`${path}/why`) : Promise.resolve({ reasons: [] }),
    api(`/v1/events?claim=${encodeURIComponent(id)}&limit=1000`),
  ]);
  const left = claim.expires ? Date.parse(claim.expires) - Date.now() : null;
  return h('section', { 'aria-labelledby': 'claim-title' },
    h('h1', { id: 'claim-title' }, 'Claim ', h('code', {}, claim.id)),
    h('dl', { class: 'card claim-facts' },
      fact('State', h('span', { class: 'state', 'data-state': claim.state }, claim.state)),
      fact('Holder', claim.holder),
      fact('Priority', claim.priority),
      fact('Created', clock(claim.created)),
      claim.group && fact('Group', claim.group),
      fact('Lease', claim.lease === '0' ? 'none'
        : h('span', { class: left !== null && left < LEASE_WARN_MS ? 'lease-warn' : '' },
          `${claim.lease}${claim.expires ? `, expires ${clock(claim.expires)}` : ''}`)),
      fact('Reason', h('span', { class: 'claim-reason' }, claim.reason)),
      claim.by && fact('By', claimLink(claim.by))),
    h('h2', {}, 'Locks'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'claim-locks', 'aria-label': 'Locks of this claim' },
      h('thead', {}, h('tr', {}, ['Lock', 'Slots', 'Token', 'Position'].map((t) => h('th', {}, t)))),
      h('tbody', {}, claim.locks.map((l) => h('tr', {},
        h('td', {}, lockChip(l)), h('td', {}, l.slots),
        h('td', { class: 'token' }, l.token ?? '—'), h('td', { class: 'position' }, l.position ?? '—')))))),
    why.reasons.length > 0 && h('div', {},
      h('h2', {}, 'Why it waits'),
      // The message names its rule and lock already ("at_limit: sem/db has…").
      h('ul', { class: 'why' }, why.reasons.map((r) => h('li', { 'data-rule': r.rule, 'data-lock': r.lock },
        r.message)))),
    h('h2', {}, 'Timeline'),
    h('ol', { class: 'timeline', 'aria-label': 'Events of this claim' }, ev.events.map((e) => h('li', { 'data-type': e.type },
      h('time', { datetime: e.time }, clock(e.time)), ' ',
      h('span', { class: 'type' }, e.type), e.reason ? ` — ${e.reason}` : ''))));
}

function fact(k, v) {
  return [h('dt', {}, k), h('dd', {}, v)];
}

// ---- live feed ---------------------------------------------------------------

function setLive(on) {
  state.live = on;
  const el = document.getElementById('live');
  el.textContent = on ? 'live' : 'stream down: refreshing every 5 s';
  el.className = `live ${on ? 'on' : 'off'}`;
  clearInterval(state.pollTimer);
  state.pollTimer = on ? null : setInterval(() => render(), POLL_MS);
}

function addToFeed(e) {
  const list = document.getElementById('feed');
  list.prepend(h('li', { 'data-type': e.type, 'data-seq': e.seq },
    h('time', { datetime: e.time }, clock(e.time)), ' ', h('strong', {}, e.type), ' ',
    e.claim ? claimLink(e.claim) : '', e.holder ? ` ${e.holder}` : '',
    e.locks && e.locks.length ? ` ${e.locks.join(' ')}` : ''));
  while (list.children.length > FEED_MAX) list.lastElementChild.remove();
}

// Reads /v1/events/stream with fetch() (so that the token goes in a header)
// and parses server-sent events: "id: N", "data: JSON", a blank line ends an
// event, lines starting with ":" are heartbeats.
async function stream() {
  for (;;) {
    const ctl = new AbortController();
    state.streamAbort = ctl;
    try {
      const res = await fetch(`/v1/events/stream?since=${state.lastSeq}`, {
        headers: headers({ Accept: 'text/event-stream' }), signal: ctl.signal, cache: 'no-store',
      });
      if (res.status === 401) {
        showAuthPrompt('This server needs a token: enter an API token above.');
        throw new Error('unauthorized');
      }
      if (!res.ok || !res.body) throw new Error(`stream: HTTP ${res.status}`);
      setLive(true);
      render();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      let data = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (line === '') {
            if (data.length) onEvent(data.join('\n'));
            data = [];
          } else if (line.startsWith('data:')) {
            data.push(line.slice(5).replace(/^ /, ''));
          }
        }
      }
    } catch (e) {
      if (ctl.signal.aborted && state.streamAbort !== ctl) return; // replaced (new token)
    }
    if (state.streamAbort !== ctl) return;
    setLive(false);
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (state.streamAbort !== ctl) return;
  }
}

function onEvent(text) {
  let e;
  try { e = JSON.parse(text); } catch { return; }
  if (e.seq <= state.lastSeq) return;
  state.lastSeq = e.seq;
  addToFeed(e);
  scheduleRender();
}

function restartStream() {
  if (state.streamAbort) {
    const old = state.streamAbort;
    state.streamAbort = null;
    old.abort();
  }
  stream();
}

// The feed starts with the last few events: /v1/status (the leader's, from
// any server) says which sequence number comes next.
async function startFeed() {
  try {
    const st = await api('/v1/status');
    state.lastSeq = Math.max(0, (st.next_seq || 1) - 21);
  } catch { state.lastSeq = 0; }
  restartStream();
}

// Shared mode (several servers on one database): which server leads, as
// the server serving this page knows it; nothing for a single server.
async function showLeader() {
  const el = document.getElementById('leader');
  try {
    const hz = await (await fetch('/healthz')).json();
    if (hz.epoch === undefined) { el.hidden = true; return; }
    const self = hz.self === hz.leader;
    el.textContent = hz.leader
      ? `${self ? 'this server leads' : `led by ${hz.leader}`} (epoch ${hz.epoch})`
      : 'no leader yet';
    el.title = `this server: ${hz.self}, ${hz.role}`;
    el.className = `leader ${hz.leader ? 'on' : 'off'}`;
    el.hidden = false;
  } catch { el.hidden = true; }
}

// ---- start -------------------------------------------------------------------

function init() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token');
  input.value = state.token;
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.token = input.value.trim();
    if (state.token) sessionStorage.setItem(TOKEN_KEY, state.token);
    else sessionStorage.removeItem(TOKEN_KEY);
    hideAuthPrompt();
    render();
    restartStream();
  });
  document.addEventListener('click', (ev) => {
    const a = ev.target.closest('a[data-link]');
    if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
    ev.preventDefault();
    navigate(a.getAttribute('href'));
  });
  window.addEventListener('popstate', () => render(true));
  document.getElementById('view').addEventListener('focusout', () => {
    if (state.deferred) {
      state.deferred = false;
      delete document.body.dataset.deferred;
      scheduleRender();
    }
  });
  setLive(false);
  render();
  startFeed();
  showLeader();
  setInterval(showLeader, 5000);
}

init();
