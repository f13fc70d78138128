// dashboard.test.mjs - the web dashboard in a real browser.
//
// Starts sluiced ($SLUICED) on 127.0.0.1, a free port and a temporary store,
// builds a known state over the HTTP API, and checks what headless Debian
// chromium (driven by playwright-core, which never downloads a browser)
// shows: bar widths and colours, holders, queue order and block reasons, a
// claim's timeline, a limit changed from a card, a release made through the
// API appearing on open pages without a reload, the token prompt of a server
// with auth; and, on servers of their own, that the pools page of a large
// queue never downloads the queue listing, short claim labels that differ,
// and tables that fit their card (1400 px) and the queue on a phone (390 px).
// Screenshots go to $UI_ARTIFACTS (the build directory when run by CTest).
// Waits poll what the page or the server reports, with a deadline; nothing
// sleeps for a fixed time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const SLUICED = process.env.SLUICED;
const ARTIFACTS = resolve(process.env.UI_ARTIFACTS || 'artifacts');
const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const DEADLINE_MS = 15000;

// Utilization colours of style.css (--ok, --warn, --crit).
const GREEN = 'rgb(46, 158, 79)';
const YELLOW = 'rgb(217, 164, 0)';
const RED = 'rgb(210, 54, 43)';

const servers = [];
let browser;
let tmp;

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

async function until(fn, what) {
  const end = Date.now() + DEADLINE_MS;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) assert.fail(`timed out waiting for ${what} (last: ${last})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// A sluiced of its own: {base, api(method, path, body)}.
async function startServer(name, configYaml) {
  assert.ok(SLUICED, 'set SLUICED to the sluiced binary');
  const port = await freePort();
  const dir = join(tmp, name);
  mkdirSync(dir);
  const args = ['--listen', `127.0.0.1:${port}`, '--store', `sqlite:${join(dir, 'sluice.db')}`,
    '--log-level', 'warn'];
  if (configYaml) {
    writeFileSync(join(dir, 'sluice.yaml'), configYaml);
    args.push('--config', join(dir, 'sluice.yaml'));
  }
  const proc = spawn(SLUICED, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((r) => proc.on('exit', (code, sig) => r({ code, sig })));
  servers.push({ proc, exited });
  const base = `http://127.0.0.1:${port}`;
  await until(async () => (await fetch(`${base}/healthz`)).ok, `${name} to answer /healthz`);
  return {
    base,
    async api(method, path, body, token) {
      const headers = { 'Content-Type': 'application/json' };
      if (token) headers.Authorization = `Bearer ${token}`;
      const res = await fetch(base + path, { method, headers, body: body && JSON.stringify(body) });
      const text = await res.text();
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    },
  };
}

async function shot(page, name, fullPage = true) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });
}

// Every read of the page finds its elements and reads them in one
// page.evaluate, never page.$eval: $eval finds the element in one round trip
// and reads it in a second, and a redraw in between (each event redraws)
// detaches it: a detached bar measures 0 of 0 px (NaN %) and has no computed
// colour.

// Width of a card's bar as a percentage of its track, and its colour.
async function bar(page, key) {
  return page.evaluate((k) => {
    const el = document.querySelector(`[data-lock="${k}"] .bar-fill`);
    if (!el) throw new Error(`no bar on ${k}`);
    return {
      pct: Math.round((el.getBoundingClientRect().width / el.parentElement.getBoundingClientRect().width) * 100),
      colour: getComputedStyle(el).backgroundColor,
    };
  }, key);
}

const text = (page, sel) => page.evaluate((s) => {
  const el = document.querySelector(s);
  if (!el) throw new Error(`nothing matches ${s}`);
  return el.textContent.trim();
}, sel);
const texts = (page, sel) => page.evaluate((s) => [...document.querySelectorAll(s)].map((el) => el.textContent.trim()), sel);

let srv;
const ids = {};

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'sluice-ui-'));
  mkdirSync(ARTIFACTS, { recursive: true });
  srv = await startServer('main');
  // db: 3 of 4 held (75 %, yellow), then "big" waits for 2 slots and deploy.
  await srv.api('PUT', '/v1/semaphores/db', { limit: 4, lease: '1h' });
  await srv.api('PUT', '/v1/semaphores/web', { limit: 10, strategy: 'skip' });
  await srv.api('PUT', '/v1/semaphores/cache', { limit: 10 });
  await srv.api('PUT', '/v1/semaphores/frozen', { limit: 0 });
  await srv.api('PUT', '/v1/semaphores/pool-*', { limit: 2 });
  for (const i of [1, 2, 3]) {
    const c = await srv.api('POST', '/v1/claims', { holder: `wf-${i}`, locks: [{ semaphore: 'db' }] });
    assert.equal(c.state, 'held');
    ids[`wf-${i}`] = c;
  }
  ids.web = await srv.api('POST', '/v1/claims', { holder: 'w1', locks: [{ semaphore: 'web', slots: 9 }] });
  ids.cache = await srv.api('POST', '/v1/claims', { holder: 'c1', locks: [{ semaphore: 'cache' }] });
  ids.big = await srv.api('POST', '/v1/claims',
    { holder: 'big', locks: [{ semaphore: 'db', slots: 2 }, { mutex: 'deploy' }] });
  ids.dep = await srv.api('POST', '/v1/claims', { holder: 'dep', locks: [{ mutex: 'deploy' }] });
  ids.p1 = await srv.api('POST', '/v1/claims',
    { holder: 'p1', priority: 5, locks: [{ semaphore: 'web', slots: 2 }] });
  for (const k of ['big', 'dep', 'p1']) assert.equal(ids[k].state, 'pending');
  const ctx = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 },
  });
  browser = ctx;
});

after(async () => {
  if (browser) await browser.close();
  for (const s of servers) {
    s.proc.kill('SIGTERM');
    const { code, sig } = await s.exited;
    // A clean shutdown: sanitizer builds report leaks and errors by exit code.
    assert.ok(code === 0 || sig === 'SIGTERM', `sluiced exited with ${code} ${sig}`);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function openPage(path, server = srv) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(server.base + path);
  await until(() => page.$('body[data-rendered]'), `${path} to render`);
  page.errors = errors;
  return page;
}

test('the server serves the dashboard and its files, and nothing else outside /v1/', async () => {
  for (const p of ['/', '/queue', `/claims/${ids.big.id}`]) {
    const res = await fetch(srv.base + p);
    assert.equal(res.status, 200, p);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(await res.text(), /<script type="module" src="\/ui\/app.js">/);
  }
  const js = await fetch(`${srv.base}/ui/app.js`);
  assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  const css = await fetch(`${srv.base}/ui/style.css`);
  assert.equal(css.headers.get('content-type'), 'text/css; charset=utf-8');
  const missing = await fetch(`${srv.base}/nope`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, 'not_found');
  assert.equal((await fetch(`${srv.base}/ui/nope.js`)).status, 404);
  assert.equal((await fetch(`${srv.base}/claims/a/b`)).status, 404);
  assert.equal((await fetch(`${srv.base}/`, { method: 'POST' })).status, 405);
});

test('pools: summary, bars with width and colour, badges, holders and waiters', async () => {
  const page = await openPage('/');
  await until(() => page.$('[data-lock="sem/db"]'), 'the db card');
  // Locks: 5 semaphores (pattern included) and the busy mutex deploy.
  assert.equal(await text(page, '[data-figure="locks"] .n'), '6');
  // Slots used of total over the configured semaphores: 3+9+1+0 of 4+10+10+0.
  assert.equal(await text(page, '[data-figure="slots"] .n'), '13 / 24');
  assert.equal(await text(page, '[data-figure="pending"] .n'), '3');

  assert.deepEqual(await bar(page, 'sem/db'), { pct: 75, colour: YELLOW });
  assert.deepEqual(await bar(page, 'sem/web'), { pct: 90, colour: RED });
  assert.deepEqual(await bar(page, 'sem/cache'), { pct: 10, colour: GREEN });
  assert.deepEqual(await bar(page, 'mtx/deploy'), { pct: 0, colour: GREEN });
  assert.equal(await text(page, '[data-lock="sem/db"] .used'), '3 / 4 used');
  assert.equal(await text(page, '[data-lock="sem/web"] .strategy'), 'strategy skip');
  assert.equal(await text(page, '[data-lock="sem/db"] .badge.pending'), '1 pending');
  assert.equal(await text(page, '[data-lock="mtx/deploy"] .badge.pending'), '2 pending');
  assert.equal(await text(page, '[data-lock="sem/frozen"] .badge.paused'), 'paused');
  assert.equal(await text(page, '[data-lock="sem/pool-*"] .badge.pattern'), 'pattern');
  assert.equal(await page.$('[data-lock="sem/pool-*"] .bar'), null, 'a pattern has no bar');

  // Expanding db lists its holders oldest first, with tokens, and its waiter.
  await page.click('[data-lock="sem/db"] summary');
  await until(() => page.$('[data-lock="sem/db"] table.holders'), 'the holders of db');
  assert.deepEqual(await texts(page, '[data-lock="sem/db"] table.holders td.holder'), ['wf-1', 'wf-2', 'wf-3']);
  const tokens = (await texts(page, '[data-lock="sem/db"] table.holders td.token')).map(Number);
  assert.deepEqual(tokens, [1, 2, 3]);
  assert.deepEqual(await texts(page, '[data-lock="sem/db"] table.waiters td.holder'), ['big']);
  assert.match(await text(page, '[data-lock="sem/db"] table.waiters td.reason'), /^at_limit: /);
  // A 1 h lease is not about to run out.
  assert.equal(await page.$('[data-lock="sem/db"] .lease-warn'), null);
  await shot(page, 'pools');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'pools-phone');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('queue: every pending claim in queue order with its block reason', async () => {
  const page = await openPage('/queue');
  await until(() => page.$('table.queue'), 'the queue table');
  const { queue } = await srv.api('GET', '/v1/queue');
  // priority 5 first, then the older of the two priority-0 claims.
  assert.deepEqual(queue.map((c) => c.holder), ['p1', 'big', 'dep']);
  assert.deepEqual(await texts(page, 'table.queue td.holder'), ['p1', 'big', 'dep']);
  assert.deepEqual(await texts(page, 'table.queue td.position'), ['1', '2', '3']);
  assert.deepEqual(await texts(page, 'table.queue td.priority'), ['5', '0', '0']);
  assert.deepEqual(await texts(page, 'table.queue td.reason'), queue.map((c) => c.reason));
  assert.equal(await text(page, 'table.queue td.reason[data-rule="at_limit"]'),
    'at_limit: sem/web has 9 of 10 slots in use');
  assert.match(await text(page, `tr[data-claim="${ids.dep.id}"] td.reason`), /^behind: .*mtx\/deploy/);
  assert.deepEqual(await texts(page, `tr[data-claim="${ids.big.id}"] .chip`), ['sem/db ×2', 'mtx/deploy']);
  await shot(page, 'queue');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('claim: locks with positions, why, and the timeline', async () => {
  const page = await openPage(`/claims/${ids.big.id}`);
  await until(() => page.$('ol.timeline li'), 'the timeline');
  assert.equal(await text(page, '.state'), 'pending');
  assert.deepEqual(await texts(page, 'table.claim-locks td.position'), ['1', '1']);
  assert.deepEqual(await texts(page, 'ol.timeline .type'), ['claim.queued', 'claim.waiting']);
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('ul.why li')].map((e) => e.dataset.rule)),
    ['at_limit', 'other_lock']);
  // Each reason reads as the server words it, its rule named once.
  const why = await srv.api('GET', `/v1/claims/${ids.big.id}/why`);
  assert.deepEqual(await texts(page, 'ul.why li'), why.reasons.map((r) => r.message));
  assert.match(why.reasons[1].message, /^other_lock: mtx\/deploy would admit it/);
  for (const t of await texts(page, 'ul.why li')) assert.doesNotMatch(t, /^(\w+): \1:/);
  await shot(page, 'claim');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a release through the API shows on open pages without a reload', async () => {
  const pools = await openPage('/');
  await until(() => pools.$('#live.on'), 'the event stream to connect');
  await pools.click('[data-lock="sem/db"] summary');
  await until(() => pools.$('[data-lock="sem/db"] table.holders'), 'the holders of db');
  const claim = await openPage(`/claims/${ids.big.id}`);
  await until(() => claim.$('#live.on'), 'the event stream to connect');
  for (const p of [pools, claim]) await p.evaluate(() => { window.notReloaded = true; });

  // wf-1 leaves: big gets 2 slots of db and deploy, so db is 4 of 4 (red).
  await srv.api('DELETE', `/v1/claims/${ids['wf-1'].id}`);
  await until(async () => (await text(pools, '[data-lock="sem/db"] .used')) === '4 / 4 used', 'db 4 of 4');
  assert.deepEqual(await bar(pools, 'sem/db'), { pct: 100, colour: RED });
  await until(async () => (await texts(pools, '[data-lock="sem/db"] table.holders td.holder')).join() === 'wf-2,wf-3,big',
    'the new holders of db');
  await until(() => claim.$('.state[data-state="held"]'), 'the claim page to show held');
  await until(async () => (await texts(claim, 'ol.timeline .type')).includes('claim.acquired'), 'claim.acquired');
  const feed = await texts(pools, '#feed li strong');
  assert.ok(feed.includes('claim.released') && feed.includes('claim.acquired'), feed.join());
  for (const p of [pools, claim]) assert.equal(await p.evaluate(() => window.notReloaded), true);
  await shot(pools, 'pools-after-release');
  await shot(claim, 'claim-held');
  assert.deepEqual(pools.errors, []);
  assert.deepEqual(claim.errors, []);
  await pools.close();
  await claim.close();
});

test('a limit changed from a card reaches the server', async () => {
  const page = await openPage('/');
  await until(() => page.$('[data-lock="sem/web"] form.limit-form'), 'the limit form');
  await page.getByLabel('New limit for web').fill('20');
  await page.click('[data-lock="sem/web"] form.limit-form button');
  await until(async () => (await srv.api('GET', '/v1/semaphores/web')).limit === 20, 'limit 20');
  const web = await srv.api('GET', '/v1/semaphores/web');
  assert.equal(web.strategy, 'skip', 'the strategy is kept');
  await until(async () => (await text(page, '[data-lock="sem/web"] .used')) === '11 / 20 used',
    'p1 admitted and the card redrawn');
  await page.close();
});

test('with tokens: a 401 prompts for one, and the token is kept for the session', async () => {
  const secured = await startServer('auth', 'tokens:\n  - name: ops\n    token: "ui-test-secret"\n    admin: true\n');
  await secured.api('PUT', '/v1/semaphores/guarded', { limit: 2 }, 'ui-test-secret');
  const page = await browser.newPage();
  await page.goto(secured.base + '/');
  await until(() => page.$('#auth-prompt:not([hidden])'), 'the token prompt');
  assert.match(await text(page, '#auth-prompt'), /needs a token/);
  await shot(page, 'auth-prompt');
  await page.getByLabel('API token').fill('ui-test-secret');
  await page.getByRole('button', { name: 'Save token' }).click();
  await until(() => page.$('[data-lock="sem/guarded"]'), 'the guarded card');
  assert.equal(await page.evaluate(() => document.getElementById('auth-prompt').hidden), true);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sluice.token')), 'ui-test-secret');
  // The stream is read with the token in a header (fetch, not EventSource).
  await until(() => page.$('#live.on'), 'the authenticated event stream');
  await secured.api('POST', '/v1/claims', { holder: 'g1', locks: [{ semaphore: 'guarded' }] }, 'ui-test-secret');
  await until(async () => (await text(page, '[data-lock="sem/guarded"] .used')) === '1 / 2 used', 'live update with a token');
  await page.close();
});

test('a redraw in flight does not replace a limit the user started typing', async () => {
  const page = await openPage('/');
  await until(() => page.$('#live.on'), 'the event stream to connect');
  // Hold the next listing of semaphores, so that a redraw waits on the server
  // while the user types.
  let release;
  const held = new Promise((r) => { release = r; });
  let asked = false;
  await page.route('**/v1/semaphores', async (route) => {
    asked = true;
    await held;
    await route.continue();
  });
  await srv.api('PUT', '/v1/semaphores/cache', { limit: 11 });
  await until(() => asked, 'a redraw to ask for the semaphores');
  const field = page.getByLabel('New limit for cache');
  await field.fill('12');
  await field.evaluate((el) => { el.dataset.typedIn = 'yes'; });
  release();
  await page.unrouteAll({ behavior: 'wait' });
  // The draw that was in flight is dropped, and the page says it waits.
  await until(() => page.$('body[data-deferred]'), 'the redraw to wait for the field');
  assert.equal(await page.evaluate(() => document.querySelector('[data-lock="sem/cache"] input').dataset.typedIn), 'yes');
  assert.equal(await field.inputValue(), '12');
  await page.click('[data-lock="sem/cache"] form.limit-form button');
  await until(async () => (await srv.api('GET', '/v1/semaphores/cache')).limit === 12, 'limit 12');
  await until(async () => (await text(page, '[data-lock="sem/cache"] .used')) === '1 / 12 used', 'the card redrawn');
  assert.equal(await page.$('body[data-deferred]'), null);
  assert.deepEqual(page.errors, []);
  await page.close();
});

// A server with a large queue: BIG_N claims pending on a paused semaphore,
// created by 16 parallel loops, so that many share a millisecond (and so the
// first 8 characters of their ids).
const BIG_N = 2000;
let bigServer;
function big() {
  bigServer ??= (async () => {
    const s = await startServer('big');
    await s.api('PUT', '/v1/semaphores/big/paused', { limit: 0 });
    const made = [];
    await Promise.all(Array.from({ length: 16 }, async (_, w) => {
      for (let i = w; i < BIG_N; i += 16) {
        const c = await s.api('POST', '/v1/claims', { holder: `big-${i}`, locks: [{ semaphore: 'big/paused' }] });
        made.push(c.id);
      }
    }));
    return { ...s, ids: made };
  })();
  return bigServer;
}

test('pools: the pending figure is a count; the queue listing is not fetched', async () => {
  const s = await big();
  const page = await browser.newPage();
  const finished = [];
  page.on('requestfinished', (req) => finished.push(req.sizes().then((z) => ({
    path: new URL(req.url()).pathname, bytes: z.responseBodySize,
  }))));
  await page.goto(s.base + '/');
  await until(async () => (await page.$('body[data-rendered]'))
    && (await text(page, '[data-figure="pending"] .n')) === String(BIG_N), 'the pending figure');
  await until(() => page.$('#live.on'), 'the event stream to connect');
  // Ten redraws, each seen on the page: a mutex held and released five times.
  for (let i = 0; i < 5; i++) {
    const c = await s.api('POST', '/v1/claims', { holder: 'churn', locks: [{ mutex: 'churn/m' }] });
    assert.equal(c.state, 'held');
    await until(() => page.$('[data-lock="mtx/churn/m"]'), 'churn/m on the page');
    await s.api('DELETE', `/v1/claims/${c.id}`);
    await until(async () => !(await page.$('[data-lock="mtx/churn/m"]')), 'churn/m off the page');
  }
  await page.close();
  const reqs = await Promise.all(finished);
  const count = (p) => reqs.filter((r) => r.path === p).length;
  // At least the ten redraws seen (and the first draw): every one lists semaphores.
  assert.ok(count('/v1/semaphores') >= 10, `${count('/v1/semaphores')} draws`);
  assert.equal(count('/v1/queue'), 0, 'the pools page fetched the queue listing');
  const json = reqs.filter((r) => r.path === '/healthz' || r.path.startsWith('/v1/')).reduce((n, r) => n + r.bytes, 0);
  assert.ok(json < 100000, `${json} bytes of JSON for ${count('/v1/semaphores')} draws`);
});

test('queue: short claim labels come from the random part of the id, distinct in a large queue', async () => {
  const s = await big();
  assert.ok(new Set(s.ids.map((id) => id.slice(0, 8))).size < s.ids.length,
    'some claims share their creation millisecond');
  const page = await openPage('/queue', s);
  await until(async () => (await page.evaluate(() => document.querySelectorAll('table.queue tbody tr').length)) === BIG_N,
    `${BIG_N} rows`);
  const rows = await page.evaluate(() => [...document.querySelectorAll('table.queue tbody tr')].map((tr) => {
    const a = tr.querySelector('a[data-link]');
    return { id: tr.dataset.claim, label: a.textContent, title: a.title };
  }));
  for (const r of rows) {
    assert.equal(r.id.length, 22);
    assert.equal(r.title, r.id);
    assert.equal(r.label, r.id.slice(-8));
  }
  assert.equal(new Set(rows.map((r) => r.label)).size, rows.length, 'distinct labels');
  // The events panel labels claims the same way.
  await until(async () => (await page.evaluate(() => document.querySelectorAll('#feed a').length)) > 0, 'claims in the feed');
  const feed = await page.evaluate(() => [...document.querySelectorAll('#feed a')].map((a) => ({ label: a.textContent, title: a.title })));
  for (const f of feed) {
    assert.equal(f.title.length, 22);
    assert.equal(f.label, f.title.slice(-8));
  }
  await shot(page, 'queue-large', false); // the first rows: the whole page is 100 000 px tall
  assert.deepEqual(page.errors, []);
  await page.close();
});

// Holders of 66 characters, as CI job names are.
const LONG1 = 'ci/acme-platform/monorepo/.github/workflows/gpu-integration.yml#45';
const LONG2 = 'ci/acme-platform/monorepo/.github/workflows/gpu-benchmarks.yml#451';

// What of a page's layout is wrong, in words: each element matched by
// `cells` (within `root`) must have a size and lie within the box of `box`
// (the viewport when null), a time on one line, and no .table-wrap under
// `root` may scroll sideways. Read in one evaluation (see bar()).
function layoutProblems(page, root, box, cells) {
  return page.evaluate(({ root, box, cells }) => {
    const out = [];
    const r0 = document.querySelector(root);
    if (!r0) return [`nothing matches ${root}`];
    const b = box ? document.querySelector(box).getBoundingClientRect() : { left: 0, right: innerWidth };
    const lines = (el) => {
      const range = document.createRange();
      range.selectNodeContents(el);
      return new Set([...range.getClientRects()].filter((q) => q.width > 0).map((q) => Math.round(q.top))).size;
    };
    for (const sel of cells) {
      const els = r0.querySelectorAll(sel);
      if (els.length === 0) out.push(`${root}: no ${sel}`);
      for (const el of els) {
        const q = el.getBoundingClientRect();
        const what = `${root} ${sel} "${el.textContent.trim().slice(0, 30)}"`;
        if (q.width < 1 || q.height < 1) out.push(`${what} has no size`);
        if (q.left < b.left - 0.5 || q.right > b.right + 0.5) {
          out.push(`${what} at ${q.left.toFixed(0)}..${q.right.toFixed(0)}, outside ${b.left.toFixed(0)}..${b.right.toFixed(0)}`);
        }
        if (el.classList.contains('time') && lines(el) > 1) out.push(`${what} takes ${lines(el)} lines`);
        if (el.classList.contains('holder') && lines(el) > 3) out.push(`${what} takes ${lines(el)} lines`);
      }
    }
    for (const w of r0.querySelectorAll('.table-wrap')) {
      if (w.scrollWidth > w.clientWidth + 1) out.push(`${root}: a table ${w.scrollWidth} px wide in ${w.clientWidth} px`);
    }
    if (document.documentElement.scrollWidth > innerWidth) {
      out.push(`the page is ${document.documentElement.scrollWidth} px wide in ${innerWidth} px`);
    }
    return out;
  }, { root, box, cells });
}

test('layout: a card\'s holders and waiters fit the card; the queue fits a phone', async () => {
  assert.equal(LONG1.length, 66);
  assert.equal(LONG2.length, 66);
  const s = await startServer('layout');
  await s.api('PUT', '/v1/semaphores/ci/gpu', { limit: 2, lease: '10m' });
  await s.api('POST', '/v1/claims', { holder: LONG1, locks: [{ semaphore: 'ci/gpu' }] });
  await s.api('POST', '/v1/claims', { holder: 'runner-7', locks: [{ semaphore: 'ci/gpu' }] });
  const w = await s.api('POST', '/v1/claims', { holder: LONG2, priority: 3, locks: [{ semaphore: 'ci/gpu' }] });
  assert.equal(w.state, 'pending');
  const g1 = await s.api('POST', '/v1/claims', { holder: LONG2, group: 'repo/pr-12' });
  const g2 = await s.api('POST', '/v1/claims', { holder: LONG1, group: 'repo/pr-12' });
  assert.deepEqual([g1.state, g2.state], ['held', 'pending']);
  const cards = ['sem/ci/gpu', 'mtx/group/repo/pr-12'];

  const page = await openPage('/', s);
  await page.setViewportSize({ width: 1400, height: 900 });
  for (const k of cards) {
    await until(() => page.$(`[data-lock="${k}"] summary`), `the card ${k}`);
    await page.click(`[data-lock="${k}"] summary`);
    await until(() => page.$(`[data-lock="${k}"] table.waiters`), `the waiters of ${k}`);
  }
  const cells = ['td.claim', 'td.holder', 'td.since', 'td.expires', 'td.waiting', 'td.reason'];
  await shot(page, 'pools-cards');
  for (const k of cards) assert.deepEqual(await layoutProblems(page, `[data-lock="${k}"]`, `[data-lock="${k}"]`, cells), []);
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'pools-cards-phone');
  for (const k of cards) assert.deepEqual(await layoutProblems(page, `[data-lock="${k}"]`, `[data-lock="${k}"]`, cells), []);
  assert.deepEqual(page.errors, []);
  await page.close();

  const queue = await openPage('/queue', s);
  await until(() => queue.$('table.queue td.reason'), 'the queue table');
  const qcells = ['td.claim', 'td.holder', 'td.waiting', 'td.locks', 'td.reason'];
  await queue.setViewportSize({ width: 1400, height: 900 });
  await shot(queue, 'queue-long-holders');
  assert.deepEqual(await layoutProblems(queue, 'main', 'main', qcells), []);
  await queue.setViewportSize({ width: 390, height: 844 });
  await shot(queue, 'queue-phone');
  assert.deepEqual(await layoutProblems(queue, 'main', 'main', qcells), []);
  assert.deepEqual(queue.errors, []);
  await queue.close();
});
