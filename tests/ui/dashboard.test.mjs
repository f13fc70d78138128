// dashboard.test.mjs - the web dashboard in a real browser.
//
// Starts sluiced ($SLUICED) on 127.0.0.1, a free port and a temporary store,
// builds a known state over the HTTP API, and checks what headless Debian
// chromium (driven by playwright-core, which never downloads a browser)
// shows: bar widths and colours, holders, queue order and block reasons, a
// claim's timeline, a limit changed from a card, a release made through the
// API appearing on open pages without a reload, and the token prompt of a
// server with auth. Screenshots go to $UI_ARTIFACTS (the build directory
// when run by CTest). Waits poll what the page or the server reports, with a
// deadline; nothing sleeps for a fixed time.
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

async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
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

async function openPage(path) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(srv.base + path);
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
