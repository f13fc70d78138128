// dashboard.test.mjs - the overview, the queue and the claim page in a real
// browser, and what every page shares (served paths, live updates, the
// token prompt, a redraw that waits while the user types, the layout).
//
// Starts sluiced ($SLUICED) on a free port with a temporary store, builds a
// known state over the HTTP API, and checks what headless Debian chromium
// shows: locks busiest first, the filter and the table view kept in the URL,
// bars, patterns, the first holders and waiters of busy cards, queue order
// and block reasons, who blocks a pending claim, a limit changed from a card
// after a confirmation, and a release made through the API appearing on open
// pages without a reload. Screenshots go to $UI_ARTIFACTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, cleanup, openPage, until, text, texts, count, bar, shot, shots, layoutProblems, dialogText,
  launch, GREEN, YELLOW, RED, DESKTOP, PHONE,
} from './helpers.mjs';

let srv;
const ids = {};

before(async () => {
  srv = await startServer('main');
  // db: 3 of 4 held (75 %, yellow), then "big" waits for 2 slots and deploy.
  await srv.api('PUT', '/v1/semaphores/db', { limit: 4, lease: '1h' });
  await srv.api('PUT', '/v1/semaphores/web', { limit: 10, strategy: 'skip' });
  await srv.api('PUT', '/v1/semaphores/cache', { limit: 10 });
  await srv.api('PUT', '/v1/semaphores/frozen', { limit: 0 });
  await srv.api('PUT', '/v1/semaphores/pool-*', { limit: 2 });
  await srv.api('PUT', '/v1/semaphores/team-a/db', { limit: 3 });
  for (const i of [1, 2, 3]) {
    const c = await srv.api('POST', '/v1/claims', { holder: `wf-${i}`, locks: [{ semaphore: 'db' }] });
    assert.equal(c.state, 'held');
    ids[`wf-${i}`] = c;
  }
  ids.web = await srv.api('POST', '/v1/claims', { holder: 'w1', locks: [{ semaphore: 'web', slots: 9 }] });
  ids.cache = await srv.api('POST', '/v1/claims', { holder: 'c1', locks: [{ semaphore: 'cache' }] });
  ids.pool = await srv.api('POST', '/v1/claims', { holder: 'pa', locks: [{ semaphore: 'pool-a' }] });
  ids.big = await srv.api('POST', '/v1/claims',
    { holder: 'big', locks: [{ semaphore: 'db', slots: 2 }, { mutex: 'deploy' }] });
  ids.dep = await srv.api('POST', '/v1/claims', { holder: 'dep', locks: [{ mutex: 'deploy' }] });
  ids.p1 = await srv.api('POST', '/v1/claims',
    { holder: 'p1', priority: 5, locks: [{ semaphore: 'web', slots: 2 }] });
  for (const k of ['big', 'dep', 'p1']) assert.equal(ids[k].state, 'pending');
  await launch();
});

after(cleanup);

test('the server serves the dashboard\'s pages and files, and nothing else outside /v1/', async () => {
  for (const p of ['/', '/?q=db&view=table', '/queue', '/claims', `/claims/${ids.big.id}`, '/locks/sem/db',
    '/locks/sem/team-a/db', '/locks/mtx/deploy', '/runs/nightly-42', '/runs/a/b']) {
    const res = await fetch(srv.base + p);
    assert.equal(res.status, 200, p);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(res.headers.get('content-security-policy'), /default-src 'self'/);
    assert.match(await res.text(), /<script type="module" src="\/ui\/app.js">/);
  }
  for (const f of ['app.js', 'lib.js', 'overview.js', 'lock.js', 'charts.js', 'claims.js', 'claim.js', 'run.js', 'feed.js', 'dialog.js', 'actions.js', 'rules.js']) {
    const js = await fetch(`${srv.base}/ui/${f}`);
    assert.equal(js.status, 200, f);
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  }
  const css = await fetch(`${srv.base}/ui/style.css`);
  assert.equal(css.headers.get('content-type'), 'text/css; charset=utf-8');
  const missing = await fetch(`${srv.base}/nope`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, 'not_found');
  for (const p of ['/ui/nope.js', '/claims/a/b', '/locks/sem/', '/locks/x', '/runs/']) {
    assert.equal((await fetch(srv.base + p)).status, 404, p);
  }
  assert.equal((await fetch(`${srv.base}/`, { method: 'POST' })).status, 405);
});

test('overview: figures, busiest first, bars, patterns, and the first holders and waiters of busy cards', async () => {
  const page = await openPage(srv, '/');
  await until(() => page.$('[data-lock="sem/db"] .peek-holders'), 'the db card with its holders');
  const status = await srv.api('GET', '/v1/status');
  // 7 semaphores (the pattern and pool-a made from it included) and the busy mutex deploy.
  assert.equal(await text(page, '[data-figure="locks"] .n'), '8');
  // Slots used of total over the semaphores: 3+9+1+1+0+0 of 4+10+10+2+0+3.
  assert.equal(await text(page, '[data-figure="slots"] .n'), '14 / 29');
  assert.equal(await text(page, '[data-figure="pending"] .n'), String(status.claims.pending));
  assert.equal(await text(page, '[data-figure="held"] .n'), String(status.claims.held));
  // Busiest first: waiters first (deploy 2; then web and db 1 each, web the
  // fuller), then by the share of the limit in use; the pattern last.
  const order = await page.evaluate(() => [...document.querySelectorAll('.cards > [data-lock]')].map((e) => e.dataset.lock));
  assert.deepEqual(order, ['mtx/deploy', 'sem/web', 'sem/db', 'sem/pool-a', 'sem/cache', 'sem/frozen', 'sem/team-a/db', 'sem/pool-*']);

  assert.deepEqual(await bar(page, '[data-lock="sem/db"]'), { pct: 75, colour: YELLOW });
  assert.deepEqual(await bar(page, '[data-lock="sem/web"]'), { pct: 90, colour: RED });
  assert.deepEqual(await bar(page, '[data-lock="sem/cache"]'), { pct: 10, colour: GREEN });
  assert.deepEqual(await bar(page, '[data-lock="mtx/deploy"]'), { pct: 0, colour: GREEN });
  assert.equal(await text(page, '[data-lock="sem/db"] .used'), '3 / 4 used');
  assert.equal(await text(page, '[data-lock="sem/web"] .strategy'), 'strategy skip');
  assert.equal(await text(page, '[data-lock="sem/db"] .badge.pending'), '1 pending');
  assert.equal(await text(page, '[data-lock="mtx/deploy"] .badge.pending'), '2 pending');
  assert.equal(await text(page, '[data-lock="sem/frozen"] .badge.paused'), 'paused');
  // A pattern reads as a pattern: its per-lock limit and what was made from it.
  assert.equal(await text(page, '[data-lock="sem/pool-*"] .badge.pattern'), 'pattern');
  assert.equal(await page.$('[data-lock="sem/pool-*"] .bar'), null, 'a pattern has no bar');
  assert.equal(await page.$('[data-lock="sem/pool-*"] .used'), null, 'a pattern has no "used"');
  assert.match(await text(page, '[data-lock="sem/pool-*"] .pattern-limit'), /^Each semaphore matching pool-\* gets a limit of 2/);
  assert.equal(await text(page, '[data-lock="sem/pool-*"] .made'), '1 in use (1 slot held, 0 pending): pool-a');
  assert.equal(await text(page, '[data-lock="sem/pool-a"] .badge.pattern'), 'from pool-*');

  // The busy cards show their first holders and waiters without a click.
  assert.deepEqual(await texts(page, '[data-lock="sem/db"] .peek-holders .holder'), ['wf-1', 'wf-2', 'wf-3']);
  assert.deepEqual(await texts(page, '[data-lock="sem/db"] .peek-waiters .holder'), ['big']);
  const dbLock = await srv.api('GET', '/v1/semaphores/db');
  assert.equal(await text(page, '[data-lock="sem/db"] .peek-waiters .reason'), dbLock.pending[0].reason);
  assert.equal(await text(page, '[data-lock="sem/db"] .more-link'), 'All 3 holders and 1 waiter →');
  assert.equal(await page.$('[data-lock="sem/db"] .lease-warn'), null);
  await shots(page, 'overview');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('overview: the filter (name or namespace/) and the table view live in the URL', async () => {
  const page = await openPage(srv, '/');
  await page.getByLabel('Filter locks by name or namespace').pressSequentially('pool');
  await until(async () => (await count(page, '.cards > [data-lock]')) === 2, 'two cards');
  assert.equal(new URL(page.url()).search, '?q=pool');
  // The box keeps the focus while the page redraws under it.
  assert.equal(await page.evaluate(() => document.activeElement.id), 'filter');
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('.cards > [data-lock]')].map((e) => e.dataset.lock)),
    ['sem/pool-a', 'sem/pool-*']);
  assert.equal(await text(page, '.toolbar .count'), '2 of 8 shown, busiest first');
  // A namespace: the names under team-a/ only.
  await page.getByLabel('Filter locks by name or namespace').fill('team-a/');
  await until(async () => (await page.evaluate(() => [...document.querySelectorAll('.cards > [data-lock]')].map((e) => e.dataset.lock).join())) === 'sem/team-a/db', 'team-a/ only');
  // The table view, with the filter kept; a reload keeps both.
  await page.click('a.toggle[data-view="table"]');
  await until(() => page.$('table.locks'), 'the table view');
  assert.deepEqual(Object.fromEntries(new URL(page.url()).searchParams), { q: 'team-a/', view: 'table' });
  await page.reload();
  await until(() => page.$('table.locks tr[data-lock="sem/team-a/db"]'), 'the table after a reload');
  assert.equal(await page.inputValue('#filter'), 'team-a/');
  assert.equal(await count(page, 'table.locks tbody tr'), 1);
  // Every lock in the table, in the cards' order, every column visible.
  await page.getByLabel('Filter locks by name or namespace').fill('');
  await until(async () => (await count(page, 'table.locks tbody tr')) === 8, 'eight rows');
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('table.locks tbody tr')].map((e) => e.dataset.lock)),
    ['mtx/deploy', 'sem/web', 'sem/db', 'sem/pool-a', 'sem/cache', 'sem/frozen', 'sem/team-a/db', 'sem/pool-*']);
  assert.equal(await text(page, 'table.locks tr[data-lock="sem/db"] td.pending-count'), '1');
  assert.equal(await text(page, 'table.locks tr[data-lock="sem/pool-*"] td.use'), '2 per semaphore');
  assert.deepEqual(await layoutProblems(page, 'main', 'main', ['td.name', 'td.use', 'td.pending-count', 'td.token']), []);
  await shots(page, 'overview-table');
  assert.deepEqual(await layoutProblems(page, 'main', null, ['td.name', 'td.pending-count']), []);
  // Back: the cards again.
  await page.goBack();
  await until(() => page.$('.cards'), 'the cards after going back');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('queue: pending claims in queue order with their block reasons, a page at a time', async () => {
  const page = await openPage(srv, '/queue');
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
  await shots(page, 'queue');
  // Two a page: the cursor of the server in the URL, positions going on.
  await page.goto(`${srv.base}/queue?limit=2`);
  await until(async () => (await count(page, 'table.queue tbody tr')) === 2, 'a page of two');
  await page.click('.pager a.next');
  await until(async () => (await texts(page, 'table.queue td.position')).join() === '3', 'the second page');
  assert.deepEqual(await texts(page, 'table.queue td.holder'), ['dep']);
  assert.equal(await page.$('.pager a.next'), null, 'the last page has no next');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('claim: who blocks a pending claim, per lock, and its timeline', async () => {
  const page = await openPage(srv, `/claims/${ids.big.id}`);
  await until(() => page.$('ol.timeline li'), 'the timeline');
  assert.equal(await text(page, '.state'), 'pending');
  assert.deepEqual(await texts(page, 'table.claim-locks td.position'), ['1', '1']);
  assert.deepEqual(await texts(page, 'ol.timeline .type'), ['claim.queued', 'claim.waiting']);
  const why = await srv.api('GET', `/v1/claims/${ids.big.id}/why`);
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('.blocker')].map((e) => e.dataset.rule)),
    why.reasons.map((r) => r.rule));
  // Each reason reads as the server words it, its rule named once.
  assert.deepEqual(await texts(page, '.blocker p.why'), why.reasons.map((r) => r.message));
  for (const t of await texts(page, '.blocker p.why')) assert.doesNotMatch(t, /^(\w+): \1:/);
  // db: nobody ahead; held by wf-1..3, each linked.
  assert.equal(await text(page, '.blocker[data-lock="sem/db"] .ahead'), 'No claim is ahead of it here.');
  assert.deepEqual(await texts(page, '.blocker[data-lock="sem/db"] .blocking-holders .holder-name'), ['wf-1', 'wf-2', 'wf-3']);
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('.blocker[data-lock="sem/db"] .blocking-holders li a.claim-link')].map((a) => a.getAttribute('href'))),
    [1, 2, 3].map((i) => `/claims/${ids[`wf-${i}`].id}`));
  assert.match(await text(page, '[data-fact="granted"]'), /^not yet$/);
  assert.match(await text(page, '[data-fact="waited"]'), /so far$/);
  await shots(page, 'claim-pending');
  // dep waits behind big on deploy: the claim ahead is big, linked.
  await page.goto(`${srv.base}/claims/${ids.dep.id}`);
  await until(() => page.$('.blocker[data-lock="mtx/deploy"] .ahead'), 'the blocker of dep');
  const depWhy = await srv.api('GET', `/v1/claims/${ids.dep.id}/why`);
  assert.equal(depWhy.reasons[0].ahead_count, 1);
  assert.equal(await text(page, '.blocker[data-lock="mtx/deploy"] .ahead'), `1 ahead of it: ${ids.big.id.slice(-8)}`);
  assert.equal(await page.getAttribute('.blocker[data-lock="mtx/deploy"] .ahead a', 'href'), `/claims/${ids.big.id}`);
  assert.equal(await text(page, '.blocker[data-lock="mtx/deploy"] .blocking-holders'), 'Nobody holds it.');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a release through the API shows on open pages without a reload', async () => {
  const pools = await openPage(srv, '/');
  await until(() => pools.$('#live.on'), 'the event stream to connect');
  await until(() => pools.$('[data-lock="sem/db"] .peek-holders'), 'the holders of db');
  const claim = await openPage(srv, `/claims/${ids.big.id}`);
  await until(() => claim.$('#live.on'), 'the event stream to connect');
  for (const p of [pools, claim]) await p.evaluate(() => { window.notReloaded = true; });

  // wf-1 leaves: big gets 2 slots of db and deploy, so db is 4 of 4 (red).
  await srv.api('DELETE', `/v1/claims/${ids['wf-1'].id}`);
  await until(async () => (await text(pools, '[data-lock="sem/db"] .used')) === '4 / 4 used', 'db 4 of 4');
  assert.deepEqual(await bar(pools, '[data-lock="sem/db"]'), { pct: 100, colour: RED });
  await until(async () => (await texts(pools, '[data-lock="sem/db"] .peek-holders .holder')).join() === 'wf-2,wf-3,big',
    'the new holders of db');
  await until(() => claim.$('.state[data-state="held"]'), 'the claim page to show held');
  await until(async () => (await texts(claim, 'ol.timeline .type')).includes('claim.acquired'), 'claim.acquired');
  // F11: each event says who asked for it; big was let in by the others' release: the server's rule.
  const actors = await claim.$$eval('ol.timeline li', (lis) => lis.map((li) => [li.dataset.type, li.querySelector('.actor')?.dataset.actor]));
  assert.deepEqual(actors.find(([t]) => t === 'claim.acquired'), ['claim.acquired', 'sluice']);
  assert.ok(actors.find(([t]) => t === 'claim.queued')[1], actors.join());
  // A held claim: its granted time, how long it waited, and no blockers.
  const held = await srv.api('GET', `/v1/claims/${ids.big.id}`);
  assert.notEqual(held.granted, null);
  assert.notEqual(await text(claim, '[data-fact="granted"]'), 'not yet');
  assert.equal(await claim.$('.who-blocks'), null);
  assert.equal(await text(claim, '[data-action="cancel"]'), 'Revoke claim…');
  const feed = await texts(pools, '#feed li strong');
  assert.ok(feed.includes('claim.released') && feed.includes('claim.acquired'), feed.join());
  for (const p of [pools, claim]) assert.equal(await p.evaluate(() => window.notReloaded), true);
  await shot(pools, 'overview-after-release');
  await shots(claim, 'claim-held');
  assert.deepEqual(pools.errors, []);
  assert.deepEqual(claim.errors, []);
  await pools.close();
  await claim.close();
});

test('a limit changed from a card is confirmed first, then reaches the server', async () => {
  const page = await openPage(srv, '/');
  await until(() => page.$('[data-lock="sem/web"] form.limit-form'), 'the limit form');
  await page.getByLabel('New limit for web').fill('20');
  await page.click('[data-lock="sem/web"] form.limit-form button');
  const d = await dialogText(page);
  assert.equal(d.title, 'Set web\'s limit from 10 to 20?');
  assert.match(d.body, /1 claim holds 9 slots\. Raising the limit grants at once the waiting claims that then fit \(1 claim waiting/);
  await shots(page, 'confirm-limit', false);
  await page.getByRole('button', { name: 'Set the limit to 20' }).click();
  await until(async () => (await srv.api('GET', '/v1/semaphores/web')).limit === 20, 'limit 20');
  const web = await srv.api('GET', '/v1/semaphores/web');
  assert.equal(web.strategy, 'skip', 'the strategy is kept');
  assert.equal(web.overtake_limit, '1m', 'the overtake limit is kept');
  await until(async () => (await text(page, '[data-lock="sem/web"] .used')) === '11 / 20 used',
    'p1 admitted and the card redrawn');
  // A pattern's limit is each matching semaphore's: the dialog says so. Declined.
  await page.getByLabel('New limit for pool-*').fill('3');
  await page.click('[data-lock="sem/pool-*"] form.limit-form button');
  const p = await dialogText(page);
  assert.equal(p.title, 'Set pool-*\'s limit from 2 to 3?');
  assert.match(p.body, /^Every semaphore matching pool-\* that has no configuration of its own gets a limit of 3\. /);
  await page.getByRole('button', { name: 'Keep as is' }).click();
  await until(async () => !(await page.$('dialog.confirm')), 'the dialog to close');
  assert.equal((await srv.api('GET', '/v1/semaphores/pool-*')).limit, 2);
  await page.close();
});

test('with tokens: a 401 prompts for one, and the token is kept for the session', async () => {
  const secured = await startServer('auth', 'tokens:\n  - name: ops\n    token: "ui-test-secret-0123456789"\n    admin: true\n');
  await secured.api('PUT', '/v1/semaphores/guarded', { limit: 2 }, 'ui-test-secret-0123456789');
  const b = await launch();
  const page = await b.newPage();
  await page.goto(secured.base + '/');
  await until(() => page.$('#auth-prompt:not([hidden])'), 'the token prompt');
  assert.match(await text(page, '#auth-prompt'), /needs a token/);
  await shot(page, 'auth-prompt');
  await page.getByLabel('API token').fill('ui-test-secret-0123456789');
  await page.getByRole('button', { name: 'Save token' }).click();
  await until(() => page.$('[data-lock="sem/guarded"]'), 'the guarded card');
  assert.equal(await page.evaluate(() => document.getElementById('auth-prompt').hidden), true);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sluice.token')), 'ui-test-secret-0123456789');
  // The stream is read with the token in a header (fetch, not EventSource).
  await until(() => page.$('#live.on'), 'the authenticated event stream');
  await secured.api('POST', '/v1/claims', { holder: 'g1', locks: [{ semaphore: 'guarded' }] }, 'ui-test-secret-0123456789');
  await until(async () => (await text(page, '[data-lock="sem/guarded"] .used')) === '1 / 2 used', 'live update with a token');
  await page.close();
});

test('a redraw in flight does not replace a limit the user started typing', async () => {
  const page = await openPage(srv, '/');
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
  await dialogText(page);
  await page.getByRole('button', { name: 'Set the limit to 12' }).click();
  await until(async () => (await srv.api('GET', '/v1/semaphores/cache')).limit === 12, 'limit 12');
  await until(async () => (await text(page, '[data-lock="sem/cache"] .used')) === '1 / 12 used', 'the card redrawn');
  assert.equal(await page.$('body[data-deferred]'), null);
  assert.deepEqual(page.errors, []);
  await page.close();
});

// Holders of 66 characters, as CI job names are.
const LONG1 = 'ci/acme-platform/monorepo/.github/workflows/gpu-integration.yml#45';
const LONG2 = 'ci/acme-platform/monorepo/.github/workflows/gpu-benchmarks.yml#451';

test('layout: cards, a lock\'s tables and the queue keep every column at 1400 px and on a phone', async () => {
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

  const page = await openPage(s, '/');
  for (const k of cards) await until(() => page.$(`[data-lock="${k}"] .peek-waiters`), `the waiters of ${k}`);
  const peek = ['.peek .holder', '.peek .time', '.peek .reason', '.more-link'];
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    for (const k of cards) assert.deepEqual(await layoutProblems(page, `[data-lock="${k}"]`, `[data-lock="${k}"]`, peek), [], `${k} at ${size.width}`);
  }
  await shots(page, 'overview-long-holders');
  await page.close();

  // A lock's page: every column of its holders and waiters within the page.
  for (const k of cards) {
    const lp = await openPage(s, `/locks/${k}`);
    await until(() => lp.$('table.waiters td.reason'), `the waiters of ${k}`);
    const cells = ['td.claim', 'td.holder', 'td.since', 'td.expires', 'td.waiting', 'td.reason'];
    for (const size of [DESKTOP, PHONE]) {
      await lp.setViewportSize(size);
      assert.deepEqual(await layoutProblems(lp, 'main', 'main', cells), [], `${k} at ${size.width}`);
    }
    if (k === 'sem/ci/gpu') await shots(lp, 'lock-long-holders');
    assert.deepEqual(lp.errors, []);
    await lp.close();
  }

  const queue = await openPage(s, '/queue');
  await until(() => queue.$('table.queue td.reason'), 'the queue table');
  const qcells = ['td.claim', 'td.holder', 'td.waiting', 'td.locks', 'td.reason'];
  for (const size of [DESKTOP, PHONE]) {
    await queue.setViewportSize(size);
    assert.deepEqual(await layoutProblems(queue, 'main', 'main', qcells), [], `queue at ${size.width}`);
  }
  await shots(queue, 'queue-long-holders');
  assert.deepEqual(queue.errors, []);
  await queue.close();
});
