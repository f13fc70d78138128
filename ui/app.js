// app.js - the sluice dashboard's entry: a client-side router over the pages
// (overview.js, lock.js, claims.js, claim.js, run.js), the redraw loop driven
// by the live feed (feed.js), and the header (token, leader).
//
//   /                      overview: locks busiest first (?q= filter, ?view=table)
//   /locks/sem/NAME        a semaphore (or pattern): holders, waiters, charts
//   /locks/mtx/NAME        a mutex
//   /queue                 pending claims in queue order, a page at a time
//   /claims                live and ended claims, filtered, a page at a time
//   /claims/ID             one claim: who blocks it, cancel, timeline
//   /runs/RUN              the claims of a run (holders RUN/STEP), by step
//
// sluiced answers index.html for each of these paths (src/server/ui.c).
import {
  h, headers, state, TOKEN_KEY, whoami, AuthError, ApiError, showError, clearDrawError, hideAuthPrompt, countdownText, LEASE_WARN_MS, words,
} from './lib.js';
import { viewOverview } from './overview.js';
import { viewLock, lockRoute } from './lock.js';
import { viewClaims, viewQueue } from './claims.js';
import { viewClaim } from './claim.js';
import { viewRun, runRoute } from './run.js';
import { startFeed, restartStream } from './feed.js';

const loop = {
  redrawTimer: null,
  rendering: false,
  again: false,
  deferred: false, // a redraw waits for a field to lose focus
  pressedAt: 0,    // a pointer is down on the page since: a redraw waits for it to come up
  held: false,     // ... and one is owed then
};

// What a view may ask of the app.
const ctx = {
  rerender: () => scheduleRender(),
  navigate: (href) => navigate(href),
};

function route() {
  const p = location.pathname;
  if (p === '/queue') return { name: 'queue', view: () => viewQueue(ctx) };
  if (p === '/claims') return { name: 'claims', view: () => viewClaims(ctx) };
  const m = p.match(/^\/claims\/([^/]+)$/);
  if (m) return { name: 'claim', view: () => viewClaim(ctx, decodeURIComponent(m[1])) };
  const lock = lockRoute(p);
  if (lock) return { name: 'lock', view: () => viewLock(ctx, lock) };
  const run = runRoute(p);
  if (run) return { name: 'run', view: () => viewRun(ctx, run) };
  return { name: 'pools', view: () => viewOverview(ctx) };
}

function navigate(href) {
  history.pushState(null, '', href);
  render(true);
}

// Draws the current page. Called on navigation, on each event (debounced)
// and by the poller; a call that arrives while drawing runs once after it.
async function render(focus = false) {
  if (loop.rendering) {
    loop.again = true;
    return;
  }
  // Redrawing would replace a field the user is typing in (a limit): wait
  // until it loses focus. Nor under a pressed pointer: a link or button
  // replaced between its mousedown and mouseup never gets the click.
  if (!focus && typing()) {
    defer();
    return;
  }
  if (!focus && pressed()) {
    hold();
    return;
  }
  loop.rendering = true;
  const r = route();
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === r.name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = document.getElementById('view');
  const t0 = performance.now();
  try {
    await whoami(); // what the token may do, before the view draws its actions
    const node = await r.view();
    // The user may have started typing while the view's data was on its way:
    // drop this draw rather than replace the field under their fingers.
    if (!focus && typing()) {
      defer();
      return;
    }
    if (!focus && pressed()) {
      hold();
      return;
    }
    const keep = liveInput();
    main.replaceChildren(node);
    restoreInput(keep);
    if (focus) showError(''); // another page: the last action's error was about the one left
    else clearDrawError();
    document.body.dataset.page = r.name;
    document.body.dataset.rendered = String(Date.now());
    document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
    if (focus && !keep) main.focus({ preventScroll: true });
  } catch (e) {
    if (e instanceof AuthError) main.replaceChildren(h('p', { class: 'muted' }, 'Waiting for a token.'));
    else showError(e instanceof ApiError ? words(e) : e.message, 'draw');
  } finally {
    loop.rendering = false;
  }
  if (loop.again) {
    loop.again = false;
    render();
  }
}

// A field of the page that holds what the user is typing (a limit) has the
// focus, or a form was changed and not sent (the claims' filters). Fields marked data-live-input (the overview's filter) redraw the
// page as they change instead.
function typing() {
  const el = document.activeElement;
  if (document.querySelector('#view form[data-edited]')) return true; // filters changed, not yet applied
  return el && (el.tagName === 'INPUT' || el.tagName === 'SELECT') && el.closest('#view') && !el.hasAttribute('data-live-input');
}

// The filter box keeps its focus, text and caret across a redraw. A draw
// built before the last key was typed carries the old text: the box keeps
// what was typed, and the page is drawn again for it (the URL has it).
function liveInput() {
  const el = document.activeElement;
  if (!el || !el.id || !el.hasAttribute('data-live-input')) return null;
  return { id: el.id, value: el.value, start: el.selectionStart, end: el.selectionEnd };
}

function restoreInput(keep) {
  if (!keep) return;
  const el = document.getElementById(keep.id);
  if (!el) return;
  if (el.value !== keep.value) {
    el.value = keep.value;
    scheduleRender();
  }
  el.focus({ preventScroll: true });
  try { el.setSelectionRange(keep.start, keep.end); } catch { /* not a text field */ }
}

// The page is not redrawn until the field loses focus (body[data-deferred]
// says so while it lasts).
function defer() {
  loop.deferred = true;
  loop.again = false; // the redraw on focusout covers it
  document.body.dataset.deferred = 'true';
}

// A press counts for 2 s at most: a release the page never heard of (the
// pointer let go outside the window) must not stop the redraws.
const PRESS_MS = 2000;

function pressed() {
  return loop.pressedAt > 0 && Date.now() - loop.pressedAt < PRESS_MS;
}

function hold() {
  if (!loop.held) setTimeout(() => { if (loop.held) { loop.held = false; scheduleRender(); } }, PRESS_MS);
  loop.held = true;
}

function scheduleRender() {
  clearTimeout(loop.redrawTimer);
  loop.redrawTimer = setTimeout(() => render(), 100);
}

// Countdowns (lease expiry, end of grace) tick every second without a redraw.
function tick() {
  for (const el of document.querySelectorAll('[data-countdown]')) {
    el.textContent = countdownText(el.dataset.countdown);
    el.classList.toggle('lease-warn', Date.parse(el.dataset.countdown) - Date.now() < LEASE_WARN_MS);
  }
}

// Shared mode (several servers on one database): which server leads, as
// the server serving this page knows it; nothing for a single server.
async function showLeader() {
  const el = document.getElementById('leader');
  try {
    // Who leads is told to admins only (with tokens configured): the badge
    // shows for them and for a server without tokens.
    const hz = await (await fetch('/healthz', { headers: headers() })).json();
    if (hz.epoch === undefined || hz.leader === undefined) { el.hidden = true; return; }
    const self = hz.self === hz.leader;
    el.textContent = hz.leader
      ? `${self ? 'this server leads' : `led by ${hz.leader}`} (epoch ${hz.epoch})`
      : 'no leader yet';
    el.title = `this server: ${hz.self}, ${hz.role}`;
    el.className = `leader ${hz.leader ? 'on' : 'off'}`;
    el.hidden = false;
  } catch { el.hidden = true; }
}

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
  document.addEventListener('pointerdown', () => { loop.pressedAt = Date.now(); }, true);
  const released = () => {
    loop.pressedAt = 0;
    if (loop.held) {
      loop.held = false;
      scheduleRender(); // after the click this release makes, which may navigate
    }
  };
  document.addEventListener('pointerup', released, true);
  document.addEventListener('pointercancel', released, true);
  window.addEventListener('blur', released);
  document.getElementById('view').addEventListener('focusout', () => {
    if (loop.deferred) {
      loop.deferred = false;
      delete document.body.dataset.deferred;
      scheduleRender();
    }
  });
  render();
  startFeed({ onEvent: scheduleRender, poll: () => render() });
  showLeader();
  setInterval(showLeader, 5000);
  setInterval(tick, 1000);
}

init();
