// run.js - one run's page (/runs/RUN). Holders follow RUN/STEP
// (nightly-42/build), and GET /v1/claims?run=RUN answers the claims of
// holder RUN and of holders RUN/...: the page groups them by step (the part
// after RUN/), with their state, locks, waited and held times, why the
// pending ones wait (/why) and their events (/v1/events?run=RUN: the
// events of the run's claims, read once and then only what is new) — the
// queue and slot history of each step.
import {
  h, api, AuthError, clock, stamp, claimLink, lockChip, headRow, withQuery, refusal,
} from './lib.js';
import { durationCells } from './claims.js';

const PAGE = 1000;
const MAX_CLAIMS = 5000; // a run bigger than this is shown in part, and says so
const DETAILED = 50; // pending claims whose why is read (one request each)
const EVENTS_PAGE = 5000;
const MAX_EVENTS = 50000; // a run with more events shows its first ones, and says so

export function runRoute(path) {
  const m = path.match(/^\/runs\/(.+)$/);
  return m ? m[1].split('/').map(decodeURIComponent).join('/') : null;
}

async function runClaims(run) {
  let claims = [];
  let after = '';
  for (;;) {
    const page = await api(withQuery('/v1/claims', { run, limit: PAGE, after }));
    claims = claims.concat(page.claims);
    if (!page.next || claims.length >= MAX_CLAIMS) return { claims, partial: Boolean(page.next) };
    after = page.next;
  }
}

const stepOf = (run, holder) => (holder === run ? '(the run itself)' : holder.slice(run.length + 1));

export async function viewRun(ctx, run) {
  let res;
  try {
    res = await runClaims(run);
  } catch (e) {
    return h('section', {}, h('h1', {}, 'Run ', h('code', {}, run)), refusal(e, 'Listing the run\'s claims'));
  }
  const { claims, partial } = res;
  const detailed = claims.filter((c) => c.state === 'pending').slice(0, DETAILED);
  const [whys, log] = await Promise.all([
    Promise.all(detailed.map((c) => api(`/v1/claims/${encodeURIComponent(c.id)}/why`).catch(soft))),
    runEvents(run),
  ]);
  const why = new Map(detailed.map((c, i) => [c.id, whys[i]]));
  const evs = new Map();
  for (const e of log.events) evs.set(e.claim, [...(evs.get(e.claim) || []), e]);
  const steps = new Map();
  for (const c of claims) {
    const s = stepOf(run, c.holder);
    steps.set(s, [...(steps.get(s) || []), c]);
  }
  const count = (st) => claims.filter((c) => c.state === st).length;
  return h('section', { 'aria-labelledby': 'run-title', 'data-run': run },
    h('h1', { id: 'run-title' }, 'Run ', h('code', {}, run)),
    h('div', { class: 'summary' },
      fig('claims', claims.length, 'Claims'), fig('steps', steps.size, 'Steps'),
      fig('pending', count('pending'), 'Pending'), fig('held', count('held') + count('revoking'), 'Holding'),
      fig('ended', claims.length - count('pending') - count('held') - count('revoking'), 'Ended')),
    partial && h('p', { class: 'muted' }, `Only the first ${claims.length} claims of this run are shown.`),
    count('pending') > DETAILED && h('p', { class: 'muted' }, `Reasons are shown for the first ${DETAILED} pending claims.`),
    log.error && refusal(log.error, 'Reading the run\'s events'),
    log.partial && h('p', { class: 'muted' }, `Only the first ${log.events.length} events of this run are shown.`),
    claims.length === 0 ? h('p', { class: 'muted', 'data-empty': 'run' },
      `No claim of holder ${run} or ${run}/… (ended claims are kept for an hour).`)
      : [...steps].map(([step, cs]) => stepSection(step, cs, why, evs)));
}

// The log only grows: a run's events are read once, then on each redraw
// (one per event) only those after the last seq read.
let cache = { run: null, events: [], next: 0 };

async function runEvents(run) {
  if (cache.run !== run) cache = { run, events: [], next: 0 };
  try {
    while (cache.events.length < MAX_EVENTS) {
      const page = await api(withQuery('/v1/events', { run, since: cache.next, limit: EVENTS_PAGE }));
      cache.events = cache.events.concat(page.events);
      cache.next = page.next;
      // A partial page (the server's read stopped at its scan budget) may
      // hold fewer events, or none: more may follow its next.
      if (page.events.length < EVENTS_PAGE && !page.partial) break;
    }
  } catch (e) {
    soft(e);
    return { events: cache.events, error: e };
  }
  return { events: cache.events, partial: cache.events.length >= MAX_EVENTS };
}

function soft(e) {
  if (e instanceof AuthError) throw e;
  return { error: e };
}

function fig(id, n, label) {
  return h('div', { class: 'figure', 'data-figure': id }, h('span', { class: 'n' }, n), label);
}

function stepSection(step, claims, why, evs) {
  const events = claims.flatMap((c) => evs.get(c.id) || []).sort((a, b) => a.seq - b.seq);
  return h('section', { class: 'step', 'data-step': step },
    h('h2', {}, 'Step ', h('code', {}, step)),
    h('div', { class: 'table-wrap stack' }, h('table', { class: 'run-claims', 'aria-label': `Claims of step ${step}` },
      headRow(['Claim', 'State', 'Locks', 'Arrived', 'Waited', 'Held', 'Reason']),
      h('tbody', {}, claims.map((c) => h('tr', { 'data-claim': c.id, 'data-state': c.state },
        h('td', { class: 'claim' }, claimLink(c.id)),
        h('td', { class: 'state', 'data-state': c.state }, c.state),
        h('td', { class: 'locks' }, c.locks.map(lockChip)),
        h('td', { class: 'arrived time', 'data-label': 'arrived' }, stamp(c.arrived)),
        durationCells(c),
        h('td', { class: 'reason' }, reasonOf(c, why.get(c.id)))))))),
    events.length > 0 && h('details', { class: 'step-events', open: true },
      h('summary', {}, `Events of step ${step} (${events.length})`),
      h('ol', { class: 'timeline', 'aria-label': `Events of step ${step}` }, events.map((e) => h('li', { 'data-type': e.type, 'data-claim': e.claim },
        h('time', { datetime: e.time }, clock(e.time)), ' ', h('span', { class: 'type' }, e.type), ' ',
        claimLink(e.claim), ' ', e.locks.join(' '), e.reason ? ` — ${e.reason}` : '')))));
}

// A pending claim's reasons, one per lock, from /why; otherwise its reason.
function reasonOf(c, why) {
  if (c.state !== 'pending' || !why) return c.reason;
  if (why.error) return refusal(why.error, 'Reading why it waits');
  return h('ul', { class: 'why' }, why.reasons.map((r) => h('li', { 'data-rule': r.rule, 'data-lock': r.lock }, r.message)));
}
