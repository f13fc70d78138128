// pages.test.mjs - a lock's page (holders, waiters with "more", the limit
// behind a confirmation, the charts of its history), the claims page
// (filters and pages), a run's page, a claim's countdowns, the cancel and
// revoke actions end to end, a limited token (what it sees, the live
// feed of its prefixes, refusals in words), and a read-only token (no action
// offered: the page asks /v1/whoami). Screenshots at 1400×900 and
// 390×844 go to $UI_ARTIFACTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, cleanup, openPage, until, text, texts, count, attrs, shots, dialogText, launch, redrawnSince, layoutProblems,
  assertCountdown, DESKTOP, PHONE,
} from './helpers.mjs';

let srv;
const ids = {};
const RUN = 'nightly-42';

before(async () => {
  srv = await startServer('pages');
  await srv.api('PUT', '/v1/semaphores/db', { limit: 2, lease: '1h' });
  await srv.api('PUT', '/v1/semaphores/many', { limit: 1 });
  const claim = (body) => srv.api('POST', '/v1/claims', body);
  ids.lint = await claim({ holder: `${RUN}/lint`, locks: [{ mutex: 'lint' }] });
  await srv.api('DELETE', `/v1/claims/${ids.lint.id}`);
  ids.build = await claim({ holder: `${RUN}/build`, locks: [{ semaphore: 'db' }] });
  ids.test = await claim({ holder: `${RUN}/test`, locks: [{ semaphore: 'db' }] });
  ids.deploy = await claim({ holder: `${RUN}/deploy`, locks: [{ semaphore: 'db' }, { mutex: 'deploy' }] });
  ids.other = await claim({ holder: 'other/x', locks: [{ semaphore: 'db' }] });
  ids.gone = await claim({ holder: 'gone', locks: [{ mutex: 'gone' }] });
  await srv.api('POST', `/v1/claims/${ids.gone.id}/cancel`);
  // A group whose older holder is revoked with 10 minutes of grace.
  ids.pr1 = await claim({ holder: 'pr-7/run-1', group: 'repo/pr-7' });
  ids.pr2 = await claim({ holder: 'pr-7/run-2', group: 'repo/pr-7', cancel: 'in-progress', grace: '10m' });
  assert.deepEqual([ids.build.state, ids.test.state, ids.deploy.state, ids.other.state], ['held', 'held', 'pending', 'pending']);
  // many: one holder and 250 waiters, for the pages of a lock.
  await claim({ holder: 'many-holder', locks: [{ semaphore: 'many' }] });
  for (let i = 0; i < 250; i += 25) {
    await Promise.all(Array.from({ length: 25 }, (_, j) => claim({ holder: `many-${i + j}`, locks: [{ semaphore: 'many' }] })));
  }
  await launch();
});

after(cleanup);

// The server's own history of a lock, or null when it has no such endpoint.
async function history(key, window = '1h') {
  const r = await srv.raw('GET', `/v1/history?lock=${encodeURIComponent(key)}&window=${window}`);
  return r.status === 200 && r.body && Array.isArray(r.body.samples) ? r.body : null;
}

test('lock page: configuration, holders, waiters with their reasons on this lock', async () => {
  const page = await openPage(srv, '/locks/sem/db');
  await until(() => page.$('table.waiters'), 'the waiters of db');
  const db = await srv.api('GET', '/v1/semaphores/db?limit=100');
  assert.equal(await text(page, '#lock-title'), 'Semaphore db');
  assert.equal(await text(page, '[data-fact="used"]'), '2 of 2 slots');
  assert.equal(await text(page, '[data-fact="holders"]'), String(db.holders_count));
  assert.equal(await text(page, '[data-fact="pending"]'), String(db.pending_count));
  assert.equal(await text(page, '[data-fact="lease"]'), '1h');
  assert.equal(await text(page, '[data-fact="strategy"]'), 'strict');
  assert.deepEqual(await texts(page, 'table.holders .holder-name'), db.holders.map((x) => x.holder));
  assert.deepEqual(await texts(page, 'table.waiters .holder-name'), db.pending.map((x) => x.holder));
  assert.deepEqual(await texts(page, 'table.waiters td.reason'), db.pending.map((x) => x.reason));
  // A lease of an hour counts down to the holder's expires.
  await assertCountdown(page, 'table.holders tr:first-child td.expires', db.holders[0].expires);
  // Holders named RUN/STEP link to their run.
  assert.equal(await page.getAttribute('table.holders tr:first-child a.run-link', 'href'), `/runs/${RUN}`);
  if (await history('sem/db') === null) {
    assert.equal(await page.getAttribute('.charts', 'data-history'), 'missing');
    assert.match(await text(page, '.history-note'), /^No history on this server/);
  }
  await shots(page, 'lock');
  // A mutex's page.
  await page.goto(`${srv.base}/locks/mtx/deploy`);
  await until(() => page.$('#lock-title'), 'the deploy page');
  assert.equal(await text(page, '#lock-title'), 'Mutex deploy');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lock page: charts of used slots, queue length and wait times match the server\'s history', async (t) => {
  const h = await history('sem/db');
  if (!h) {
    t.skip('this sluiced has no GET /v1/history: the charts are not checked (the page says "No history on this server")');
    return;
  }
  const page = await openPage(srv, '/locks/sem/db');
  await until(() => page.$('.charts[data-history="ok"] [data-chart="used"] svg'), 'the charts');
  const fresh = await history('sem/db');
  const read = (k, a) => page.getAttribute(`[data-chart="${k}"] svg`, a);
  // The samples the page drew are the server's (a sample may have been added between the two reads).
  for (const k of ['used', 'pending']) {
    const n = Number(await read(k, 'data-samples'));
    assert.ok(n === h.samples.length || n === fresh.samples.length, `${k}: ${n} samples, the server ${h.samples.length}/${fresh.samples.length}`);
    const maxes = [h, fresh].map((x) => Math.max(0, ...x.samples.map((s) => s[k])));
    assert.ok(maxes.includes(Number(await read(k, 'data-max'))), `${k} max`);
  }
  assert.equal(Number(await page.getAttribute('[data-chart="used"] .limit-line', 'data-limit')), 2);
  // The histogram: one bar per bucket with the server's counts, p50/p90/p99 marked with its values.
  const w = fresh.waits;
  const bars = await page.evaluate(() => [...document.querySelectorAll('[data-chart="waits"] rect.bucket')].map((r) => [r.dataset.le, Number(r.dataset.count)]));
  const hb = (x) => x.waits.buckets.map((b) => [b.le === null ? 'inf' : b.le, b.count]);
  assert.ok([JSON.stringify(hb(h)), JSON.stringify(hb(fresh))].includes(JSON.stringify(bars)), 'the buckets');
  for (const p of ['p50', 'p90', 'p99']) {
    if (w.count > 0) assert.equal(await page.getAttribute(`[data-chart="waits"] .mark[data-p="${p}"]`, 'data-value'), w[p]);
    assert.equal(await text(page, `[data-wait="${p}"]`), String(w[p] ?? '—'));
  }
  assert.equal(await text(page, '[data-wait="count"]'), String(w.count));
  await shots(page, 'lock-charts');
  // The 24 h window, kept in the URL.
  await page.click('a.toggle[data-window="24h"]');
  await until(async () => (await page.getAttribute('.charts', 'data-window')) === '24h', 'the 24h window');
  assert.equal(new URL(page.url()).searchParams.get('window'), '24h');
  await shots(page, 'lock-charts-24h');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lock page: 100 waiters, then 100 more at a time from the server\'s pages', async () => {
  const page = await openPage(srv, '/locks/sem/many');
  await until(() => page.$('table.waiters'), 'the waiters of many');
  assert.equal(await count(page, 'table.waiters tbody tr'), 100);
  assert.equal(await text(page, 'button[data-more="pending"]'), 'Show 100 more waiters (100 of 250 shown)');
  await page.click('button[data-more="pending"]');
  await until(async () => (await count(page, 'table.waiters tbody tr')) === 200, '200 waiters');
  await page.click('button[data-more="pending"]');
  await until(async () => (await count(page, 'table.waiters tbody tr')) === 250, '250 waiters');
  assert.equal(await page.$('button[data-more="pending"]'), null, 'no more to show');
  // In queue order, each once, as the server lists them.
  const { queue } = await srv.api('GET', '/v1/queue?lock=sem/many&limit=1000');
  assert.deepEqual(await attrs(page, 'table.waiters tbody tr', 'data-claim'), queue.map((c) => c.id));
  assert.deepEqual((await texts(page, 'table.waiters td.position')).map(Number), queue.map((c) => c.position));
  assert.equal(await page.$('button[data-more="held"]'), null, 'one holder: no more');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lock page: a limit change says what will happen; declining changes nothing', async () => {
  const page = await openPage(srv, '/locks/sem/db');
  await until(() => page.$('#lock-limit'), 'the limit field');
  const before = await srv.api('GET', '/v1/semaphores/db?limit=0');
  const { next_seq: seq0 } = await srv.api('GET', '/v1/status');
  await page.fill('#lock-limit', '1');
  await page.click('.lock-config form.limit-form button');
  let d = await dialogText(page);
  assert.equal(d.title, 'Set db\'s limit from 2 to 1?');
  assert.equal(d.body, '2 claims hold 2 slots: none is revoked; new grants wait until releases bring the slots in use under 1. 2 claims waiting.');
  await shots(page, 'confirm-lower-limit', false); // the dialog in the window
  await page.getByRole('button', { name: 'Keep as is' }).click();
  await until(async () => !(await page.$('dialog.confirm')), 'the dialog to close');
  const same = await srv.api('GET', '/v1/semaphores/db?limit=0');
  assert.equal(same.limit, before.limit);
  assert.equal((await srv.api('GET', '/v1/status')).next_seq, seq0, 'no event: nothing was written');
  // 0 pauses: the dialog says so; declined with Escape.
  await page.fill('#lock-limit', '0');
  await page.click('.lock-config form.limit-form button');
  d = await dialogText(page);
  assert.match(d.body, /^0 pauses db: 2 claims hold 2 slots and keep them \(none is revoked\); no claim is granted until the limit is raised again/);
  await page.keyboard.press('Escape');
  await until(async () => !(await page.$('dialog.confirm')), 'the dialog to close');
  assert.equal((await srv.api('GET', '/v1/semaphores/db?limit=0')).limit, 2);
  // Lowered to 1 for real: the holders keep their slots.
  await page.fill('#lock-limit', '1');
  await page.click('.lock-config form.limit-form button');
  await dialogText(page);
  await page.getByRole('button', { name: 'Set the limit to 1' }).click();
  await until(async () => (await srv.api('GET', '/v1/semaphores/db?limit=0')).limit === 1, 'limit 1');
  const after = await srv.api('GET', '/v1/semaphores/db?limit=0');
  assert.equal(after.holders_count, 2, 'nobody revoked');
  assert.equal(after.lease, '1h', 'the lease is kept');
  await until(async () => (await text(page, '[data-fact="used"]')) === '2 of 1 slots', 'the page redrawn');
  await srv.api('PUT', '/v1/semaphores/db', { limit: 2, lease: '1h' });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('claims page: outcomes and durations, server filters, pages by cursor', async () => {
  const page = await openPage(srv, '/claims?limit=5');
  await until(() => page.$('table.claims'), 'the claims table');
  const first = await srv.api('GET', '/v1/claims?order=newest&limit=5');
  assert.deepEqual(await attrs(page, 'table.claims tbody tr', 'data-claim'), first.claims.map((c) => c.id));
  // An ended claim (the first made, so on a page of its own holder's):
  // waited = granted - arrived, held = ended - granted.
  const other = await openPage(srv, `/claims?holder=${encodeURIComponent(`${RUN}/lint`)}`);
  const lint = (await srv.api('GET', `/v1/claims?holder=${encodeURIComponent(`${RUN}/lint`)}`)).claims[0];
  assert.equal(lint.id, ids.lint.id);
  await until(() => other.$(`tr[data-claim="${lint.id}"]`), 'the lint claim');
  const ms = (a, b) => String(Date.parse(b) - Date.parse(a));
  assert.equal(await other.getAttribute(`tr[data-claim="${lint.id}"] td.waited`, 'data-ms'), ms(lint.arrived, lint.granted));
  assert.equal(await other.getAttribute(`tr[data-claim="${lint.id}"] td.held`, 'data-ms'), ms(lint.granted, lint.ended));
  assert.equal(await text(other, `tr[data-claim="${lint.id}"] td.state`), 'released');
  assert.equal(await text(other, `tr[data-claim="${lint.id}"] td.reason`), 'released by its holder');
  await other.close();
  // The next page, with the server's cursor.
  await page.click('.pager a.next');
  await until(async () => new URL(page.url()).searchParams.get('after') === first.next, 'the second page');
  const second = await srv.api('GET', `/v1/claims?order=newest&limit=5&after=${encodeURIComponent(first.next)}`);
  await until(async () => (await attrs(page, 'table.claims tbody tr', 'data-claim')).join() === second.claims.map((c) => c.id).join(), 'its rows');
  // Every column inside the page at 1400 px; holder, state and reason readable on a phone.
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    assert.deepEqual(await layoutProblems(page, 'main', 'main', ['td.claim', 'td.holder', 'td.state', 'td.locks', 'td.waited', 'td.held', 'td.reason']), [], `claims at ${size.width}`);
  }
  await shots(page, 'claims');
  // The filters are the server's: state, holder, lock, run.
  for (const [q, f] of [['state=canceled', { state: 'canceled' }], ['lock=sem/db', { lock: 'sem/db' }],
    [`run=${RUN}`, { run: RUN }], ['holder=other/x', { holder: 'other/x' }]]) {
    await page.goto(`${srv.base}/claims?${q}`);
    const want = (await srv.api('GET', `/v1/claims?${q}${q.includes('lock=') ? '' : '&order=newest'}&limit=50`)).claims.map((c) => c.id);
    assert.ok(want.length > 0, q);
    await until(async () => (await attrs(page, 'table.claims tbody tr', 'data-claim')).join() === want.join(), `the claims of ${q}`);
    const form = await page.evaluate(() => Object.fromEntries(new FormData(document.querySelector('form.filters'))));
    assert.equal(form[Object.keys(f)[0]], Object.values(f)[0], `the form shows ${q}`);
  }
  // The form drives the URL.
  await page.goto(`${srv.base}/claims`);
  await until(() => page.$('form.filters'), 'the form');
  await until(() => page.$('#live.on'), 'the event stream to connect');
  await page.selectOption('form.filters select[name="state"]', 'pending');
  await page.fill('form.filters input[name="run"]', RUN);
  await page.click('form.filters button[type="submit"]');
  await until(async () => new URL(page.url()).search === `?state=pending&run=${RUN}`, 'the filter in the URL');
  await until(async () => (await attrs(page, 'table.claims tbody tr', 'data-claim')).join() === ids.deploy.id, 'the pending claim of the run');
  // A filter the server refuses reads in words.
  await page.goto(`${srv.base}/claims?lock=db`);
  await until(() => page.$('.error-note'), 'the refusal');
  assert.match(await text(page, '.error-note'), /^Listing the claims: lock="db" is not a lock key/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('run page: the claims of a run by step, with reasons and events; linked from its holders', async () => {
  const page = await openPage(srv, '/claims?holder=' + encodeURIComponent(`${RUN}/build`));
  await until(() => page.$('table.claims a.run-link'), 'the run link');
  await page.click('table.claims a.run-link');
  await until(() => page.$(`[data-run="${RUN}"] .step`), 'the run page');
  assert.equal(new URL(page.url()).pathname, `/runs/${RUN}`);
  const { claims } = await srv.api('GET', `/v1/claims?run=${RUN}`);
  assert.equal(await text(page, '[data-figure="claims"] .n'), String(claims.length));
  const steps = [...new Set(claims.map((c) => c.holder.slice(RUN.length + 1)))];
  assert.deepEqual(await attrs(page, '.step', 'data-step'), steps);
  assert.deepEqual(steps.sort(), ['build', 'deploy', 'lint', 'test']);
  for (const c of claims) {
    const step = c.holder.slice(RUN.length + 1);
    assert.equal(await text(page, `.step[data-step="${step}"] tr[data-claim="${c.id}"] td.state`), c.state);
  }
  // The pending step says why it waits, per lock, in the server's words.
  const why = await srv.api('GET', `/v1/claims/${ids.deploy.id}/why`);
  assert.deepEqual(await texts(page, '.step[data-step="deploy"] ul.why li'), why.reasons.map((r) => r.message));
  // Each step's events, from the event log.
  const ev = await srv.api('GET', `/v1/events?claim=${ids.lint.id}`);
  assert.deepEqual(await texts(page, '.step[data-step="lint"] ol.timeline .type'), ev.events.map((e) => e.type));
  assert.deepEqual(ev.events.map((e) => e.type), ['claim.queued', 'claim.acquired', 'claim.released']);
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    assert.deepEqual(await layoutProblems(page, 'main', 'main', ['td.claim', 'td.state', 'td.locks', 'td.waited', 'td.reason']), [], `run at ${size.width}`);
  }
  await shots(page, 'run');
  // A run with no claims says so.
  await page.goto(`${srv.base}/runs/nothing-here`);
  await until(() => page.$('[data-empty="run"]'), 'the empty run');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('claim page: a revoking claim\'s end of grace and a held claim\'s lease count down', async () => {
  const page = await openPage(srv, `/claims/${ids.pr1.id}`);
  await until(() => page.$('[data-fact="revoke-at"] [data-countdown]'), 'the end of grace');
  const c = await srv.api('GET', `/v1/claims/${ids.pr1.id}`);
  assert.equal(c.state, 'revoking');
  assert.equal(await page.getAttribute('[data-fact="revoke-at"] [data-countdown]', 'data-countdown'), c.revoke_at);
  // The time left, as the page counts it from revoke_at (the grace is 10m,
  // set when the file's claims were made: a loaded machine may be a minute
  // or more past that by now).
  await assertCountdown(page, '[data-fact="revoke-at"] [data-countdown]', c.revoke_at);
  // It counts down by itself: the same element changes its text (a redraw
  // would put a new element in its place, without the mark).
  await until(() => page.evaluate(() => {
    const el = document.querySelector('[data-fact="revoke-at"] [data-countdown]');
    if (!el.dataset.mark) { el.dataset.mark = el.textContent; return false; }
    return el.textContent !== el.dataset.mark;
  }), 'the countdown to tick without a redraw');
  assert.equal(await text(page, '[data-fact="by"]'), ids.pr2.id.slice(-8));
  await shots(page, 'claim-revoking');
  await page.goto(`${srv.base}/claims/${ids.build.id}`);
  await until(() => page.$('[data-fact="lease"] [data-countdown]'), 'the lease');
  const b = await srv.api('GET', `/v1/claims/${ids.build.id}`);
  assert.equal(await page.getAttribute('[data-fact="lease"] [data-countdown]', 'data-countdown'), b.expires);
  assert.notEqual(await text(page, '[data-fact="granted"]'), 'not yet');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('actions: cancel a pending claim and revoke a held one from their pages, after a confirmation', async () => {
  const page = await openPage(srv, `/claims/${ids.other.id}`);
  await until(() => page.$('[data-action="cancel"]'), 'the cancel button');
  assert.equal(await text(page, '[data-action="cancel"]'), 'Cancel claim…');
  await page.click('[data-action="cancel"]');
  let d = await dialogText(page);
  assert.equal(d.title, 'Cancel this claim?');
  assert.match(d.body, /^Cancel the pending claim of other\/x\? It leaves the queue of sem\/db and ends canceled \("canceled by an operator"\)\./);
  await shots(page, 'confirm-cancel', false);
  await page.getByRole('button', { name: 'Keep as is' }).click();
  await until(async () => !(await page.$('dialog.confirm')), 'the dialog to close');
  assert.equal((await srv.api('GET', `/v1/claims/${ids.other.id}`)).state, 'pending', 'declined: still pending');
  await page.click('[data-action="cancel"]');
  await dialogText(page);
  await page.getByRole('button', { name: 'Cancel the claim' }).click();
  await until(async () => (await srv.api('GET', `/v1/claims/${ids.other.id}`)).state === 'canceled', 'canceled on the server');
  const c = await srv.api('GET', `/v1/claims/${ids.other.id}`);
  assert.equal(c.reason, 'canceled by an operator');
  await until(() => page.$('.state[data-state="canceled"]'), 'the page to show canceled');
  assert.equal(await text(page, '[data-fact="reason"]'), 'canceled by an operator');
  assert.equal(await page.$('[data-action="cancel"]'), null, 'an ended claim has no action');
  // Revoke build (held): its slot of db goes to deploy, first in line.
  await page.goto(`${srv.base}/claims/${ids.build.id}`);
  await until(() => page.$('[data-action="cancel"]'), 'the revoke button');
  await page.click('[data-action="cancel"]');
  d = await dialogText(page);
  assert.equal(d.title, 'Revoke this claim?');
  assert.match(d.body, /what it holds \(sem\/db\) goes to the next waiters at once/);
  await page.getByRole('button', { name: 'Revoke the claim' }).click();
  await until(async () => (await srv.api('GET', `/v1/claims/${ids.build.id}`)).state === 'canceled', 'revoked on the server');
  await until(() => page.$('.state[data-state="canceled"]'), 'the page to show canceled');
  assert.equal((await srv.api('GET', `/v1/claims/${ids.deploy.id}`)).state, 'held', 'deploy got the slot');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a limited token: its locks only, the live feed of its prefixes, refusals in words', async () => {
  const s = await startServer('limited', [
    'tokens:',
    '  - name: ops', '    token: "admin-secret-0123456789"', '    admin: true',
    '  - name: team-a', '    token: "a-secret-0123456789"', '    prefixes: ["team-a/"]',
    '  - name: team-b', '    token: "b-secret-0123456789"', '    prefixes: ["team-b/"]', ''].join('\n'));
  const admin = (m, p, b) => s.api(m, p, b, 'admin-secret-0123456789');
  await admin('PUT', '/v1/semaphores/team-a/db', { limit: 1 });
  await admin('PUT', '/v1/semaphores/team-b/db', { limit: 1 });
  const a1 = await admin('POST', '/v1/claims', { holder: 'team-a/run-1/build', locks: [{ semaphore: 'team-a/db' }] });
  const b1 = await admin('POST', '/v1/claims', { holder: 'team-b/run-1', locks: [{ semaphore: 'team-b/db' }] });
  const b = await launch();
  const page = await b.newPage();
  await page.goto(s.base + '/');
  await page.evaluate(() => sessionStorage.setItem('sluice.token', 'a-secret-0123456789'));
  await page.reload();
  await until(() => page.$('[data-lock="sem/team-a/db"]'), 'the team-a card');
  assert.equal(await page.$('[data-lock="sem/team-b/db"]'), null, 'team-b is not listed');
  // The live feed carries team-a's events, and not team-b's.
  await until(() => page.$('#live.on'), 'the stream with a limited token');
  await admin('POST', '/v1/claims', { holder: 'team-b/run-2', locks: [{ semaphore: 'team-b/db' }] });
  const a2 = await admin('POST', '/v1/claims', { holder: 'team-a/run-2', locks: [{ semaphore: 'team-a/db' }] });
  await until(async () => (await page.$(`#feed li a[title="${a2.id}"]`)), 'team-a\'s new claim in the feed');
  await until(async () => (await text(page, '[data-lock="sem/team-a/db"] .badge.pending')) === '1 pending', 'the card redrawn live');
  assert.ok(!(await texts(page, '#feed li')).some((t) => t.includes('team-b')), 'no team-b event in the feed');
  await shots(page, 'limited-overview');
  // What it may not read: the page says why, in words.
  await page.goto(`${s.base}/locks/sem/team-b/db`);
  await until(() => page.$('.refused'), 'the refusal of team-b/db');
  assert.match(await text(page, '.refused'), /^Reading sem\/team-b\/db: refused for this token\. The server says: .*team-b\/db/);
  // Another tenant's claim reads as one that does not exist (the server
  // answers 404, so that no token tells it from a made-up id).
  await page.goto(`${s.base}/claims/${b1.id}`);
  await until(() => page.$('text=Claim not found'), 'a team-b claim read as not found');
  assert.equal(await page.$('.refused'), null);
  await shots(page, 'limited-refused');
  // An action the server refuses (sent with team-b's token): the message, in words.
  await page.goto(`${s.base}/claims/${a1.id}`);
  await until(() => page.$('[data-action="cancel"]'), 'the revoke button');
  await page.route('**/cancel', (route) => route.continue({ headers: { ...route.request().headers(), authorization: 'Bearer b-secret-0123456789' } }));
  await page.click('[data-action="cancel"]');
  await dialogText(page);
  await page.getByRole('button', { name: 'Revoke the claim' }).click();
  await until(() => page.$('#error:not([hidden])'), 'the refusal');
  const refusal = await text(page, '#error');
  assert.match(refusal, /^Canceling team-a\/run-1\/build's claim: .+ \(not_found, HTTP 404\)\.$/);
  assert.equal((await admin('GET', `/v1/claims/${a1.id}`)).state, 'held', 'nothing was canceled');
  // The live feed redraws the page at any moment: the refusal stays until
  // the next action or page (a redraw once wiped it before it could be read).
  const since = await page.evaluate(() => Date.now());
  await admin('POST', '/v1/claims', { holder: 'team-a/run-3', locks: [{ semaphore: 'team-a/db' }] });
  await redrawnSince(page, since);
  assert.equal(await text(page, '#error'), refusal, 'the refusal outlives a redraw');
  await page.unrouteAll({ behavior: 'wait' });
  await page.close();
});

test('a read-only token: every page reads, and no action is offered', async () => {
  const s = await startServer('readonly', [
    'tokens:',
    '  - name: ops', '    token: "admin-secret-0123456789"', '    admin: true',
    '  - name: dash', '    token: "dash-secret-0123456789"', '    read: [""]', ''].join('\n'));
  const admin = (m, p, b) => s.api(m, p, b, 'admin-secret-0123456789');
  await admin('PUT', '/v1/semaphores/team-a/db', { limit: 1 });
  const held = await admin('POST', '/v1/claims', { holder: 'team-a/run-1', locks: [{ semaphore: 'team-a/db' }] });
  await admin('POST', '/v1/claims', { holder: 'team-a/run-2', locks: [{ semaphore: 'team-a/db' }] });
  const b = await launch();
  const page = await b.newPage();
  await page.goto(s.base + '/');
  await page.evaluate(() => sessionStorage.setItem('sluice.token', 'dash-secret-0123456789'));
  await page.goto(`${s.base}/claims/${held.id}`);
  await until(() => page.$('#claim-title'), 'the claim page');
  assert.equal(await page.$('[data-action="cancel"]'), null, 'no revoke button');
  await page.goto(`${s.base}/locks/sem/team-a/db`);
  await until(() => page.$('[data-lock-page="sem/team-a/db"]'), 'the lock page');
  assert.equal(await text(page, '[data-fact="pending"]'), '1');
  assert.equal(await page.$('.limit-form'), null, 'no limit form');
  assert.equal(await page.$('[data-action="clear-queue"]'), null, 'no clear button');
  await shots(page, 'readonly-lock');
  // The same pages with the admin token offer the actions.
  await page.evaluate(() => sessionStorage.setItem('sluice.token', 'admin-secret-0123456789'));
  await page.reload();
  await until(() => page.$('[data-action="clear-queue"]'), 'the clear button for an admin');
  assert.ok(await page.$('.limit-form'));
  await page.close();
});
