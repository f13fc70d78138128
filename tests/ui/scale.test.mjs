// scale.test.mjs - the dashboard with 100 000 pending claims ($UI_SCALE_N to
// change it): how long the pages take to draw and a live update to show,
// printed in the test's output and never asserted (a loaded machine is not
// a regression: bench/ measures, tests check behaviour), and
// that the overview never downloads the queue or the claims listing: every
// figure is a count the server gives. Also: short claim labels that differ
// though many ids share their first 8 characters (their millisecond).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, cleanup, until, text, texts, count, shot, shots, launch, DESKTOP,
} from './helpers.mjs';

const N = Number(process.env.UI_SCALE_N || 100000);
const DEADLINE_MS = 60000; // how long a page may take to draw before the test gives up
const WORKERS = 32; // concurrent keep-alive connections creating claims

let s;
let createMs;
const timings = [];

function report(what, ms) {
  timings.push([what, ms]);
  console.log(`# timing: ${what}: ${ms.toFixed(0)} ms`);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

before(async () => {
  s = await startServer('scale');
  await s.api('PUT', '/v1/semaphores/hot', { limit: 1 });
  for (let i = 0; i < 20; i++) await s.api('PUT', `/v1/semaphores/pool/p${i}`, { limit: 4 });
  await s.api('POST', '/v1/claims', { holder: 'hot-holder', locks: [{ semaphore: 'hot' }] });
  for (let i = 0; i < 20; i++) await s.api('POST', '/v1/claims', { holder: `ci-${i}/build`, locks: [{ semaphore: `pool/p${i}`, slots: 1 + (i % 4) }] });
  // N claims pending on hot, through WORKERS keep-alive connections (fetch
  // keeps its connections open between requests).
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: WORKERS }, async () => {
    for (;;) {
      const i = next++;
      if (i >= N) return;
      const res = await fetch(`${s.base}/v1/claims`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ holder: `load-${i % 500}/step-${i}`, locks: [{ semaphore: 'hot' }] }),
      });
      assert.equal(res.status, 201);
      await res.arrayBuffer();
    }
  }));
  createMs = performance.now() - t0;
  console.log(`# ${N} pending claims created in ${(createMs / 1000).toFixed(1)} s`);
  const st = await s.api('GET', '/v1/status');
  assert.equal(st.claims.pending, N);
  await launch();
});

after(async () => {
  console.log(`# timings with ${N} pending claims:`);
  for (const [w, ms] of timings) console.log(`#   ${w}: ${ms.toFixed(0)} ms`);
  await cleanup();
});

// A new tab that counts the JSON it receives, by path.
async function countingPage() {
  const b = await launch();
  const page = await b.newPage();
  await page.setViewportSize(DESKTOP);
  const finished = [];
  // Sizes are read as each request finishes (not after the page closed).
  page.on('requestfinished', (req) => finished.push(req.sizes().then((z) => ({
    path: new URL(req.url()).pathname, bytes: z.responseBodySize,
  }), () => null)));
  page.reqs = async () => (await Promise.all(finished)).filter(Boolean);
  return page;
}

test(`overview with ${N} pending claims: first paint, live updates, and no listing downloaded`, async () => {
  const page = await countingPage();
  let t0 = performance.now();
  await page.goto(s.base + '/');
  await until(async () => (await page.$('[data-lock="sem/hot"] .peek-waiters'))
    && (await text(page, '[data-figure="pending"] .n')) === String(N), 'the pending figure');
  report('overview: navigation to first paint (figures and cards)', performance.now() - t0);
  assert.equal(await text(page, '[data-lock="sem/hot"] .badge.pending'), `${N} pending`);
  assert.equal(await page.evaluate(() => document.querySelector('.cards > [data-lock]').dataset.lock), 'sem/hot', 'busiest first');
  await until(() => page.$('#live.on'), 'the event stream to connect');
  // Live updates: a mutex held then released, five times; each seen on the page.
  const shows = [];
  for (let i = 0; i < 5; i++) {
    t0 = performance.now();
    const c = await s.api('POST', '/v1/claims', { holder: 'churn', locks: [{ mutex: 'churn/m' }] });
    await until(() => page.$('[data-lock="mtx/churn/m"]'), 'churn/m on the page');
    shows.push(performance.now() - t0);
    t0 = performance.now();
    await s.api('DELETE', `/v1/claims/${c.id}`);
    await until(async () => !(await page.$('[data-lock="mtx/churn/m"]')), 'churn/m off the page');
    shows.push(performance.now() - t0);
  }
  report('overview: live update, change to page (median of 10)', median(shows));
  report('overview: live update, change to page (slowest of 10)', Math.max(...shows));
  report('overview: one redraw, fetch to DOM (as the page measures it)', Number(await page.evaluate(() => document.body.dataset.renderMs)));
  await shots(page, 'overview-100k');
  const reqs = await page.reqs();
  await page.close();
  const n = (p) => reqs.filter((r) => r.path === p).length;
  assert.ok(n('/v1/semaphores') >= 10, `${n('/v1/semaphores')} draws`);
  assert.equal(n('/v1/queue'), 0, 'the overview fetched the queue listing');
  assert.equal(n('/v1/claims'), 0, 'the overview fetched the claims listing');
  const json = reqs.filter((r) => r.path.startsWith('/v1/') && r.path !== '/v1/events/stream').reduce((x, r) => x + r.bytes, 0);
  const per = json / n('/v1/semaphores');
  console.log(`# overview: ${json} bytes of JSON in ${n('/v1/semaphores')} draws (${per.toFixed(0)} a draw)`);
  assert.ok(per < 20000, `${per} bytes of JSON a draw`);
});

test('queue, lock, claim and claims pages with the large queue: first paint', async () => {
  const page = await countingPage();
  const paint = async (path, sel, what) => {
    const t0 = performance.now();
    await page.goto(s.base + path);
    await until(() => page.$(sel), what, DEADLINE_MS);
    report(`${what}: navigation to first paint`, performance.now() - t0);
  };
  await paint('/queue', 'table.queue tbody tr', 'queue (first 100 of the queue)');
  assert.equal(await count(page, 'table.queue tbody tr'), 100);
  assert.equal(await text(page, '#queue-title'), `Queue (${N} pending)`);
  let t0 = performance.now();
  await page.click('.pager a.next');
  // A click that lands while the page is still being drawn may be lost:
  // click again until the URL carries the cursor, then wait for the page.
  await until(async () => {
    if (!new URL(page.url()).searchParams.get('after')) {
      await page.click('.pager a.next', { timeout: 1000 }).catch(() => {});
      return false;
    }
    return (await texts(page, 'table.queue td.position'))[0] === '101';
  }, 'positions from 101');
  report('queue: next page', performance.now() - t0);
  await shot(page, 'queue-100k', false);

  await paint('/locks/sem/hot', 'table.waiters tbody tr', `lock page of hot (${N} waiters)`);
  assert.equal(await count(page, 'table.waiters tbody tr'), 100);
  assert.equal(await text(page, '[data-fact="pending"]'), String(N));
  t0 = performance.now();
  await page.click('button[data-more="pending"]');
  await until(async () => (await count(page, 'table.waiters tbody tr')) === 200, '200 waiters');
  report('lock page: 100 more waiters', performance.now() - t0);
  await shots(page, 'lock-100k');

  const { queue } = await s.api('GET', '/v1/queue?lock=sem/hot&limit=1');
  await paint(`/claims/${queue[0].id}`, '.blocker .ahead', 'claim page of the first waiter (who blocks it)');
  await paint('/claims?state=pending', 'table.claims tbody tr', 'claims page (pending, first 50)');
  await paint(`/runs/load-7`, '[data-run="load-7"] .step', `run page (${N / 500} claims of one run)`);
  const reqs = await page.reqs();
  const big = reqs.filter((r) => r.bytes > 2000000);
  assert.deepEqual(big, [], 'no answer over 2 MB');
  await page.close();
});

test('queue: short claim labels come from the random part of the id, distinct across pages', async () => {
  const b = await launch();
  const page = await b.newPage();
  await page.goto(`${s.base}/queue?limit=1000`);
  const rows = [];
  for (let p = 0; p < 2; p++) {
    await until(async () => (await count(page, 'table.queue tbody tr')) === 1000
      && (await texts(page, 'table.queue td.position'))[0] === String(p * 1000 + 1), `page ${p + 1}`);
    rows.push(...await page.evaluate(() => [...document.querySelectorAll('table.queue tbody tr')].map((tr) => {
      const a = tr.querySelector('a[data-link]');
      return { id: tr.dataset.claim, label: a.textContent, title: a.title };
    })));
    if (p === 0) await page.click('.pager a.next');
  }
  assert.ok(new Set(rows.map((r) => r.id.slice(0, 8))).size < rows.length, 'some claims share their creation millisecond');
  for (const r of rows) {
    assert.equal(r.id.length, 22);
    assert.equal(r.title, r.id);
    assert.equal(r.label, r.id.slice(-8));
  }
  assert.equal(new Set(rows.map((r) => r.label)).size, rows.length, 'distinct labels');
  // The events panel labels claims the same way.
  await until(async () => (await page.evaluate(() => document.querySelectorAll('#feed a[title]').length)) > 0, 'claims in the feed');
  const feed = await page.evaluate(() => [...document.querySelectorAll('#feed a[title]')].map((a) => ({ label: a.textContent, title: a.title })));
  for (const f of feed) {
    assert.equal(f.title.length, 22);
    assert.equal(f.label, f.title.slice(-8));
  }
  await page.close();
});
