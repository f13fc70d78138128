// lib.js - what every page of the dashboard shares: building elements,
// formatting times and durations, labels and links for claims, locks and
// runs, and the API client (the token kept in sessionStorage, errors turned
// into words).

export const TOKEN_KEY = 'sluice.token';
export const LEASE_WARN_MS = 10000; // a lease this close to running out is shown in red

// What the pages share at run time.
export const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
};

export class AuthError extends Error {}

// An API refusal: the HTTP status, the server's code and its message.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(code ? `${code}: ${message}` : message);
    this.status = status;
    this.code = code;
    this.serverMessage = message;
  }
}

// ---- elements -----------------------------------------------------------------

export function h(tag, attrs = {}, ...children) {
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
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// SVG elements need their namespace; attributes are set as given.
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function fact(k, v, key) {
  return [h('dt', {}, k), h('dd', key ? { 'data-fact': key } : {}, v)];
}

// A table's header cells. Cells carry data-label for the narrow layout
// (style.css: a table in a narrow .stack shows each row as a block).
export function headRow(labels) {
  return h('thead', {}, h('tr', {}, labels.map((t) => h('th', { scope: 'col' }, t))));
}

// ---- times and durations ----------------------------------------------------------

// "1m 29s": a duration in milliseconds, to the second (ms under a second).
export function span(ms) {
  if (ms < 1000 && ms >= 0) return ms < 1 ? '0s' : `${Math.round(ms)}ms`;
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr}h ${m % 60}m`;
  return `${Math.floor(hr / 24)}d ${hr % 24}h`;
}

export function ago(iso) {
  if (!iso) return '';
  return span(Date.now() - Date.parse(iso));
}

export function clock(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// Date and time, for what may be older than today.
export function stamp(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? clock(iso) : `${d.toLocaleDateString()} ${clock(iso)}`;
}

// A duration as the API writes it ("0", "250ms", "4s", "1.5s", "1m2s",
// "1h30m") in milliseconds; NaN when it is not one.
export function parseDuration(s) {
  if (s === null || s === undefined) return NaN;
  if (typeof s === 'number') return s * 1000;
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let ms = 0;
  let seen = '';
  let m;
  while ((m = re.exec(s)) !== null) {
    const n = Number(m[1]);
    ms += m[2] === 'h' ? n * 3600000 : m[2] === 'm' ? n * 60000 : m[2] === 's' ? n * 1000 : n;
    seen += m[0];
  }
  return seen === s && seen ? ms : NaN;
}

// How long a claim waited and held: waited = granted (or ended, or now)
// minus arrived; held = ended (or now) minus granted. `live` says whether the
// figure still grows.
export function durations(c, now = Date.now()) {
  const arrived = Date.parse(c.arrived || c.created);
  const granted = c.granted ? Date.parse(c.granted) : null;
  const ended = c.ended ? Date.parse(c.ended) : null;
  const waitEnd = granted ?? ended ?? now;
  return {
    waited: waitEnd - arrived,
    waitLive: granted === null && ended === null,
    held: granted === null ? null : (ended ?? now) - granted,
    heldLive: granted !== null && ended === null,
  };
}

// An element that counts down to (or up from) a time: the ticker of app.js
// rewrites every [data-countdown] each second without redrawing the page.
export function countdown(iso, cls = '') {
  const left = Date.parse(iso) - Date.now();
  return h('span', {
    class: `countdown time ${cls} ${left < LEASE_WARN_MS ? 'lease-warn' : ''}`.trim(),
    'data-countdown': iso, title: iso,
  }, countdownText(iso));
}

export function countdownText(iso) {
  const left = Date.parse(iso) - Date.now();
  return `${clock(iso)} (${left > 0 ? 'in ' + span(left) : 'due'})`;
}

// ---- labels and links -------------------------------------------------------------

export const enc = (name) => name.split('/').map(encodeURIComponent).join('/');

// Utilization colour: green under 60 %, yellow 60 to 85 %, red above.
export function level(pct) {
  if (pct > 85) return 'crit';
  if (pct >= 60) return 'warn';
  return 'ok';
}

// A claim id is 22 characters: 8 of creation time (base64 that sorts), then 14
// random. The short label is the last 8, from the random part: claims made in
// the same millisecond share their first 8. The title keeps the full id.
export const shortId = (id) => id.slice(-8);

export function claimLink(id) {
  return h('a', { href: `/claims/${encodeURIComponent(id)}`, 'data-link': true, title: id, class: 'claim-link' }, shortId(id));
}

// "sem/db" for a listing entry or a claim's lock.
export const lockKey = (l) => `${l.kind === 'mutex' ? 'mtx' : 'sem'}/${l.name}`;
export const lockHref = (key) => `/locks/${key.slice(0, 3)}/${enc(key.slice(4))}`;
export const lockApi = (key) => `/v1/${key.startsWith('mtx/') ? 'mutexes' : 'semaphores'}/${enc(key.slice(4))}`;

export function lockLink(key, text = key) {
  return h('a', { href: lockHref(key), 'data-link': true, class: 'lock-link' }, text);
}

export function lockChip(l) {
  const key = lockKey(l);
  const slots = l.slots > 1 ? ` ×${l.slots}` : '';
  return h('a', { class: 'chip', href: lockHref(key), 'data-link': true, title: `${l.kind} ${l.name}` }, `${key}${slots}`);
}

// Holders follow RUN/STEP: the run is what comes before the first '/'.
export function runOf(holder) {
  const i = holder.indexOf('/');
  return i > 0 ? holder.slice(0, i) : null;
}

export const runHref = (run) => `/runs/${enc(run)}`;

// A holder's name, with a link to its run's page when it has one.
export function holderCell(holder) {
  const run = runOf(holder);
  const name = h('span', { class: 'holder-name' }, holder);
  if (!run) return name;
  return [name, ' ', h('a', { href: runHref(run), 'data-link': true, class: 'run-link', title: `every claim of run ${run}` }, 'run')];
}

// ---- API client -------------------------------------------------------------------

export function headers(extra = {}) {
  const hd = { ...extra };
  if (state.token) hd.Authorization = `Bearer ${state.token}`;
  return hd;
}

export async function api(path, opts = {}) {
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
    const e = body && body.error;
    throw new ApiError(res.status, e ? e.code : null, e ? e.message : `HTTP ${res.status}`);
  }
  hideAuthPrompt();
  return body;
}

// What the token may do (GET /v1/whoami), read once per token, so that the
// pages leave out the actions it would be refused (a read-only dashboard
// token shows no cancel, limit or clear buttons). null when not known (a
// server without the route): every action is shown, and a refusal is told
// in words.
export async function whoami() {
  if (state.whoamiFor !== state.token) {
    state.whoamiFor = state.token;
    state.whoami = null;
    try {
      state.whoami = await api('/v1/whoami');
    } catch (e) {
      state.whoamiFor = undefined; // asked again at the next draw
      if (e instanceof AuthError) throw e;
    }
  }
  return state.whoami;
}

// Whether the token has the permission (read, claim, operate, configure)
// on every name given (lock names, or a holder); true when not known.
export function may(perm, ...names) {
  const w = state.whoami;
  if (!w) return true;
  const prefixes = w.permissions[perm] || [];
  return names.every((n) => prefixes.some((p) => n.startsWith(p)));
}

// Whether the token may cancel a claim: its own (holder and locks under its
// claim prefixes) or, with operate on every lock, anyone's.
export function mayEnd(claim) {
  const names = claim.locks.length ? claim.locks.map((l) => l.name) : [claim.holder];
  return may('operate', ...names) || may('claim', claim.holder, ...names);
}

// An API error in words for a person: a 403 says what this token may not do.
export function words(e, doing) {
  const what = doing ? `${doing}: ` : '';
  if (e instanceof ApiError && e.code === 'forbidden') {
    return `${what}refused for this token. The server says: ${e.serverMessage}.`;
  }
  if (e instanceof ApiError && e.code) return `${what}${e.serverMessage} (${e.code}, HTTP ${e.status}).`;
  return `${what}${e.message}`;
}

export function showAuthPrompt(text) {
  const el = document.getElementById('auth-prompt');
  el.textContent = text;
  el.hidden = false;
  document.getElementById('token').focus();
}

export function hideAuthPrompt() {
  document.getElementById('auth-prompt').hidden = true;
}

// The error bar says what an action or a draw could not do. An action's
// error stays until the person acts again or goes to another page: a redraw
// (the live feed redraws the page at any moment) clears only a draw's own
// error, or a refusal would flash and vanish before anyone could read it.
let errorFrom = 'action';

export function showError(text, from = 'action') {
  const el = document.getElementById('error');
  el.textContent = text || '';
  el.hidden = !text;
  errorFrom = from;
}

// After a draw that succeeded: clears the error of a failed draw, not an
// action's.
export function clearDrawError() {
  if (errorFrom === 'draw') showError('');
}

// A note in the page saying what was refused and why, in place of a section.
export function refusal(e, doing) {
  if (e instanceof AuthError) throw e;
  return h('p', { class: e instanceof ApiError && e.code === 'forbidden' ? 'refused' : 'error-note', role: 'note' }, words(e, doing));
}

// The query of the current URL as an object, and a path with a new query.
export const query = () => Object.fromEntries(new URLSearchParams(location.search));

export function withQuery(path, q) {
  const s = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== '' && v !== null && v !== undefined)).toString();
  return s ? `${path}?${s}` : path;
}
