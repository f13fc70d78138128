// rules.test.mjs - the scheduling rules on the dashboard (ui/rules.js):
// a preemption (the lock's rules, the preempted holder marked with its
// preemptor and its end of grace, the waiter's preemption status in words,
// the preempted claim's timeline), a bounded queue at its bound (the "queue N
// of M" indicator, full) cleared by an operator after a confirmation, a
// rebalanced semaphore with weighted keys (the shares table against the
// server's own quotas in /why), a rate-limited semaphore with a waiter (its
// admit time), a claim in two groups with an inline limit, a waiter dropped
// from a full queue, and the overview's markers. Screenshots at 1400×900 and
// 390×844 go to $UI_ARTIFACTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, cleanup, openPage, until, text, texts, attrs, shots, dialogText, launch, layoutProblems,
  assertCountdown, DESKTOP, PHONE,
} from './helpers.mjs';

let srv;
const ids = {};
const short = (id) => id.slice(-8);

before(async () => {
  srv = await startServer('rules');
  const put = (name, body) => srv.api('PUT', `/v1/semaphores/${name}`, body);
  const claim = (body) => srv.api('POST', '/v1/claims', body);
  // gpu: two batch jobs of priority 0 hold 2 slots each; a deploy of
  // priority 10 asks for 2 and preempts train-2 (granted last), which keeps
  // its slots for 10 minutes of grace.
  await put('gpu', { limit: 4, preempt: true, preempt_grace: '10m' });
  ids.train1 = await claim({ holder: 'batch/train-1', locks: [{ semaphore: 'gpu', slots: 2 }] });
  ids.train2 = await claim({ holder: 'batch/train-2', locks: [{ semaphore: 'gpu', slots: 2 }] });
  ids.urgent = await claim({ holder: 'deploy/urgent', priority: 10, locks: [{ semaphore: 'gpu', slots: 2 }] });
  // p2: the head would preempt, once its other lock (a mutex) is free.
  await put('p2', { limit: 1, preempt: true, preempt_grace: '10m' });
  ids.low = await claim({ holder: 'low', locks: [{ semaphore: 'p2' }] });
  ids.m2 = await claim({ holder: 'm2-holder', locks: [{ mutex: 'm2' }] });
  ids.will = await claim({ holder: 'will', priority: 5, locks: [{ semaphore: 'p2' }, { mutex: 'm2' }] });
  // builds: one slot, at most 2 waiters, a third refused.
  await put('builds', { limit: 1, max_pending: 2 });
  for (const i of [1, 2, 3]) ids[`build${i}`] = await claim({ holder: `ci/build-${i}`, locks: [{ semaphore: 'builds' }] });
  const full = await srv.raw('POST', '/v1/claims', { holder: 'ci/build-4', locks: [{ semaphore: 'builds' }] });
  assert.equal(full.status, 409);
  assert.equal(full.body.error.code, 'queue_full');
  // drops: a full queue that drops its oldest waiter.
  await put('drops', { limit: 1, max_pending: 1, on_full: 'drop_oldest' });
  ids.d1 = await claim({ holder: 'd1', locks: [{ semaphore: 'drops' }] });
  ids.d2 = await claim({ holder: 'd2', locks: [{ semaphore: 'drops' }] });
  ids.d3 = await claim({ holder: 'd3', locks: [{ semaphore: 'drops' }] });
  // api: rebalanced, 7 slots, acme weighs 3 and the others 1; globex holds
  // every slot when acme and globex each queue a claim (acme first).
  await put('api', { limit: 7, strategy: 'rebalanced', weights: { acme: 3 }, default_weight: 1 });
  await Promise.all(Array.from({ length: 7 }, (_, i) => claim({ holder: `globex/${i}`, rebalance_key: 'globex', locks: [{ semaphore: 'api' }] })));
  ids.acme = await claim({ holder: 'acme/1', rebalance_key: 'acme', locks: [{ semaphore: 'api' }] });
  ids.globex = await claim({ holder: 'globex/8', rebalance_key: 'globex', locks: [{ semaphore: 'api' }] });
  // vendor: one grant an hour; the second claim waits for the rate.
  await put('vendor', { limit: 10, rate: '1/1h', burst: 1 });
  ids.v1 = await claim({ holder: 'v1', locks: [{ semaphore: 'vendor' }] });
  ids.v2 = await claim({ holder: 'v2', locks: [{ semaphore: 'vendor' }] });
  // Two groups and an inline limit.
  ids.ci = await claim({
    holder: 'run-7/step-1', locks: [{ semaphore: 'run-7/parallel', limit: 4 }],
    groups: [{ name: 'pr-12', cancel: 'in-progress' }, { name: 'repo-x' }],
  });
  const got = async (c) => (await srv.api('GET', `/v1/claims/${c.id}`)).state;
  assert.equal(await got(ids.train2), 'revoking');
  assert.equal(await got(ids.urgent), 'pending');
  assert.equal(await got(ids.d2), 'superseded');
  assert.equal(await got(ids.v2), 'pending');
  await launch();
});

after(cleanup);

const why = async (c) => (await srv.api('GET', `/v1/claims/${c.id}/why`)).reasons[0];

test('overview: markers on locks that preempt, are bounded (and full), rate-limited, weighted, inline', async () => {
  const page = await openPage(srv, '/');
  await until(() => page.$('[data-lock="sem/gpu"] .badge[data-rule="preempt"]'), 'the gpu card\'s marker');
  const badge = (key, rule) => text(page, `[data-lock="${key}"] .badge[data-rule="${rule}"]`);
  assert.equal(await badge('sem/gpu', 'preempt'), 'preempts');
  assert.equal(await badge('sem/builds', 'bound'), 'queue 2/2 full');
  assert.deepEqual(await attrs(page, '[data-lock="sem/builds"] .badge[data-rule="bound"]', 'data-full'), ['true']);
  assert.equal(await badge('sem/drops', 'bound'), 'queue 1/1 full');
  assert.equal(await badge('sem/vendor', 'rate'), 'rate 1/1h');
  assert.equal(await badge('sem/api', 'weights'), 'weighted');
  assert.equal(await badge('sem/run-7/parallel', 'inline'), 'inline');
  assert.equal(await page.$('[data-lock="sem/vendor"] .badge[data-rule="preempt"]'), null, 'vendor does not preempt');
  // The table view shows them too.
  await page.goto(`${srv.base}/?view=table`);
  await until(() => page.$('table.locks'), 'the table');
  assert.equal(await text(page, 'table.locks tr[data-lock="sem/builds"] .badge[data-rule="bound"]'), 'queue 2/2 full');
  await shots(page, 'overview-rules');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lock page: preemption with its grace; the preempted holder marked with its preemptor and end of grace', async () => {
  const page = await openPage(srv, '/locks/sem/gpu');
  await until(() => page.$('table.holders tr[data-state="revoking"] .revoked'), 'the preempted holder');
  assert.equal(await text(page, '[data-fact="preempt"]'),
    'on: the first waiter that cannot fit revokes holders of lower priority, which keep their slots for 10m (grace)');
  const t2 = await srv.api('GET', `/v1/claims/${ids.train2.id}`);
  const row = `table.holders tr[data-claim="${ids.train2.id}"]`;
  // The time left to revoke_at as the server has it, whatever the load
  // (a loaded machine may be a minute or more past the 10m grace by now).
  assert.match(await assertCountdown(page, `${row} .revoked [data-countdown]`, t2.revoke_at),
    /^\S+ \(in (\d+m )?\d+s\)$/);
  assert.match(await text(page, `${row} .revoked`), new RegExp(`^preempted by ${short(ids.urgent.id)}, grace ends \\S+ \\(in [^)]+\\)$`));
  assert.deepEqual(await attrs(page, `${row} .revoked a.claim-link`, 'href'), [`/claims/${ids.urgent.id}`]);
  assert.deepEqual(await attrs(page, `${row} .revoked [data-countdown]`, 'data-countdown'), [t2.revoke_at]);
  assert.equal(await page.$(`table.holders tr[data-claim="${ids.train1.id}"] .revoked`), null, 'train-1 is not preempted');
  // The waiter's reason on this lock, as the server words it.
  assert.deepEqual(await texts(page, 'table.waiters td.reason'),
    ['at_limit: sem/gpu has 4 of 4 slots in use; it waits for the holders it preempted to leave']);
  assert.equal(await text(page, '[data-fact="rules"]').catch(() => null), null, 'a rule is set');
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    assert.deepEqual(await layoutProblems(page, 'main', 'main', ['td.claim', 'td.holder', 'td.expires', '.revoked']), [], `gpu at ${size.width}`);
  }
  await shots(page, 'lock-preempt');
  // A semaphore without rules says so.
  await srv.api('PUT', '/v1/semaphores/plain', { limit: 1 });
  await page.goto(`${srv.base}/locks/sem/plain`);
  await until(() => page.$('[data-fact="rules"]'), 'the rules of plain');
  assert.equal(await text(page, '[data-fact="rules"]'), 'none (no preemption, no queue bound, no rate)');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('claim pages: the preemption status in words, "preempted by" on the preempted claim and its timeline', async () => {
  const page = await openPage(srv, `/claims/${ids.urgent.id}`);
  await until(() => page.$('.blocker p.preempt'), 'the preemption status');
  const w = await why(ids.urgent);
  assert.deepEqual(w.preempt, { status: 'waiting', holders: 1, preempted: 1 });
  assert.equal(await text(page, '.blocker p.why'), w.message);
  assert.equal(await text(page, '.blocker p.preempt'),
    'Preemption: waiting for 1 preempted holder to leave (at the end of its grace, or sooner if released).');
  // Holders revoked by their group's newer claim are not called preempted
  // (the why's preempted count), and a head held back by the rate says so.
  const words = await page.evaluate(async () => {
    const { preemptWords } = await import('/ui/rules.js');
    return [preemptWords({ status: 'waiting', holders: 1, preempted: 0 }),
      preemptWords({ status: 'waiting', holders: 2, preempted: 1 }),
      preemptWords({ status: 'will', holders: 1 }, 'rate')];
  });
  assert.deepEqual(words, [
    'Preemption: waiting for 1 holder revoked by a newer claim of its group to leave (at the end of its grace, or sooner if released).',
    'Preemption: waiting for 2 revoking holders (1 preempted, 1 revoked by a newer claim of their group) to leave (at the end of their grace, or sooner if released).',
    'Preemption: will preempt 1 holder of lower priority when the rate lets it in at once.']);
  // The lock's holders, the preempted one marked.
  assert.match(await text(page, `.blocking-holders li[data-claim="${ids.train2.id}"] .revoked`), new RegExp(`^preempted by ${short(ids.urgent.id)}, grace ends`));
  await shots(page, 'claim-preempting');
  // A head that will preempt once its other lock is free.
  await page.goto(`${srv.base}/claims/${ids.will.id}`);
  await until(() => page.$('.blocker[data-lock="sem/p2"] p.preempt'), 'the will status');
  assert.deepEqual((await why(ids.will)).preempt, { status: 'will', holders: 1 });
  assert.equal(await text(page, '.blocker[data-lock="sem/p2"] p.preempt'),
    'Preemption: will preempt 1 holder of lower priority once its other locks are free.');
  assert.equal(await page.$('.blocker[data-lock="mtx/m2"] p.preempt'), null, 'a mutex does not preempt');
  // The preempted claim: revoking, its preemptor, its timeline.
  await page.goto(`${srv.base}/claims/${ids.train2.id}`);
  await until(() => page.$('ol.timeline li[data-type="claim.revoking"]'), 'the timeline');
  assert.equal(await text(page, '[data-fact="state"]'), 'revoking');
  assert.equal(await text(page, '[data-fact="reason"]'), 'preempted by a waiting claim of higher priority');
  assert.equal(await page.evaluate(() => document.querySelector('[data-fact="by"]').previousElementSibling.textContent), 'Preempted by');
  assert.equal(await text(page, '[data-fact="by"]'), short(ids.urgent.id));
  assert.match(await text(page, 'ol.timeline li[data-type="claim.revoking"]'),
    new RegExp(`claim\\.revoking — preempted by a waiting claim of higher priority \\(preempted by ${short(ids.urgent.id)}\\) · sluice$`));
  assert.deepEqual(await attrs(page, 'ol.timeline li[data-type="claim.revoking"] .by a', 'href'), [`/claims/${ids.urgent.id}`]);
  await shots(page, 'claim-preempted');
  // A waiter dropped from a full queue: superseded by the newcomer.
  await page.goto(`${srv.base}/claims/${ids.d2.id}`);
  await until(() => page.$('ol.timeline li[data-type="claim.superseded"]'), 'the superseded event');
  assert.match(await text(page, 'ol.timeline li[data-type="claim.superseded"]'),
    new RegExp(`superseded: its lock's queue was full and it was the oldest waiter \\(superseded by ${short(ids.d3.id)}\\) · sluice$`));
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lock page: a rebalanced semaphore\'s shares, each key\'s quota as the server computes it', async () => {
  const page = await openPage(srv, '/locks/sem/api');
  await until(() => page.$('table.shares tbody tr'), 'the shares table');
  assert.equal(await text(page, '[data-fact="weights"]'), 'acme 3; other keys 1');
  assert.deepEqual(await attrs(page, 'table.shares tbody tr', 'data-key'), ['acme', 'globex']);
  const row = async (k) => page.evaluate((key) => {
    const tr = document.querySelector(`table.shares tr[data-key="${key}"]`);
    return Object.fromEntries(['weight', 'quota', 'held', 'waiting'].map((c) => [c, tr.querySelector(`td.${c}`).textContent]));
  }, k);
  // floor(7 × 3 / 4) = 5 and floor(7 × 1 / 4) = 1 leave 1 slot: it goes to
  // globex, whose remainder (7 × 1 mod 4 = 3) is larger than acme's (1): the
  // exact shares are 5.25 and 1.75. The server's why says the same.
  const [wa, wg] = [await why(ids.acme), await why(ids.globex)];
  assert.equal(wa.share.quota, 5);
  assert.equal(wg.share.quota, 2);
  assert.deepEqual(await row('acme'), { weight: '3', quota: String(wa.share.quota), held: '0 (below)', waiting: '1' });
  assert.deepEqual(await row('globex'), { weight: '1', quota: `${wg.share.quota} (+1)`, held: String(wg.share.held), waiting: '1' });
  assert.match(await text(page, '.shares-note'), /^2 keys present, weights summed 4: a key's quota is floor\(7 × weight \/ 4\), and the 1 slot these floors leave goes one each/);
  await shots(page, 'lock-shares');
  // The waiter's page says its key's share.
  await page.goto(`${srv.base}/claims/${ids.globex.id}`);
  await until(() => page.$('.blocker p.share'), 'the share');
  assert.equal(await text(page, '.blocker p.share'),
    `Share: its key “globex” has a quota of 2 slots (weight 1 of 4) and holds ${wg.share.held}: at or above its quota.`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('rate and inline: the rate with its burst, a waiter\'s admit time; groups and inline limits', async () => {
  const page = await openPage(srv, '/locks/sem/vendor');
  await until(() => page.$('[data-fact="rate"]'), 'the rate');
  assert.equal(await text(page, '[data-fact="rate"]'), '1/1h, burst 1: at most 1 grants per 1h on average, 1 at once after a quiet time');
  const w = await why(ids.v2);
  assert.equal(w.rule, 'rate');
  await page.goto(`${srv.base}/claims/${ids.v2.id}`);
  await until(() => page.$('.blocker p.rate-admit'), 'the admit time');
  assert.deepEqual(await attrs(page, '.blocker p.rate-admit [data-countdown]', 'data-countdown'), [w.admit_at]);
  assert.match(await text(page, '.blocker p.rate-admit'), /^Rate: admitted when its turn for a token of the rate comes, at \S+ \(in \d+m \d+s\)\.$/);
  await shots(page, 'claim-rate');
  // Two groups and an inline limit.
  await page.goto(`${srv.base}/claims/${ids.ci.id}`);
  await until(() => page.$('[data-fact="groups"]'), 'the groups');
  assert.equal(await text(page, '[data-fact="groups"]'), 'pr-12 (cancel in-progress), repo-x (cancel none)');
  assert.equal(await text(page, 'tr[data-lock="sem/run-7/parallel"] td.inline-limit'), 'limit 4 (inline)');
  assert.equal(await text(page, 'tr[data-lock="mtx/group/pr-12"] td.inline-limit'), '—');
  await page.goto(`${srv.base}/locks/sem/run-7/parallel`);
  await until(() => page.$('[data-fact="inline"]'), 'the inline semaphore');
  assert.equal(await text(page, '[data-fact="inline"]'), 'made by its claims\' inline limit, gone when idle');
  assert.equal(await page.$('#lock-limit'), null, 'an inline semaphore has no limit form');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lock page: a bounded queue at its bound, cleared by an operator after a confirmation', async () => {
  const page = await openPage(srv, '/locks/sem/builds');
  await until(() => page.$('[data-fact="max-pending"] .queue-bound'), 'the bound');
  assert.equal(await text(page, '[data-fact="max-pending"]'),
    'queue 2 of 2 (full): at most 2 waiters; a claim arriving at a full queue is refused, 409 queue_full (on_full reject)');
  assert.deepEqual(await attrs(page, '.queue-bound', 'data-full'), ['true']);
  assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('.queue-bound')).fontWeight), '600');
  await shots(page, 'lock-bounded');
  const { next_seq: seq0 } = await srv.api('GET', '/v1/status');
  await page.click('[data-action="clear-queue"]');
  const d = await dialogText(page);
  assert.equal(d.title, 'Clear the queue of sem/builds: cancel 2 waiting claims?');
  assert.match(d.body, /^2 claims waiting for sem\/builds end canceled \("canceled by an operator"\), all in one step, so that none is granted on the way out\. The 1 holder keeps its slots\./);
  await shots(page, 'confirm-clear-queue', false);
  await page.getByRole('button', { name: 'Keep as is' }).click();
  await until(async () => !(await page.$('dialog.confirm')), 'the dialog to close');
  assert.equal((await srv.api('GET', '/v1/semaphores/builds?limit=0')).pending_count, 2, 'declined: nothing canceled');
  assert.equal((await srv.api('GET', '/v1/status')).next_seq, seq0, 'no event');
  await page.click('[data-action="clear-queue"]');
  await dialogText(page);
  await page.getByRole('button', { name: 'Cancel 2 waiting claims' }).click();
  await until(async () => (await srv.api('GET', '/v1/semaphores/builds?limit=0')).pending_count === 0, 'the queue cleared');
  for (const c of [ids.build2, ids.build3]) {
    const x = await srv.api('GET', `/v1/claims/${c.id}`);
    assert.deepEqual([x.state, x.reason], ['canceled', 'canceled by an operator']);
  }
  assert.equal((await srv.api('GET', `/v1/claims/${ids.build1.id}`)).state, 'held', 'the holder keeps its slot');
  await until(async () => (await text(page, '[data-fact="max-pending"] .queue-bound')) === 'queue 0 of 2', 'the page redrawn');
  assert.equal(await page.$('[data-action="clear-queue"]'), null, 'no waiter: no action');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a limit changed from a lock\'s page keeps its rules (a PUT replaces the whole configuration)', async () => {
  const rules = { preempt: true, preempt_grace: '5s', max_pending: 3, on_full: 'drop_oldest', rate: '5/1s', burst: 2, backdate: '1h' };
  await srv.api('PUT', '/v1/semaphores/keep', { limit: 2, lease: '1m', ...rules });
  const pick = (l, keys) => Object.fromEntries(keys.map((k) => [k, l[k]]));
  for (const [name, want] of [['keep', { ...rules, lease: '1m', strategy: 'strict' }],
    ['api', { strategy: 'rebalanced', weights: { acme: 3 }, default_weight: 1, preempt: false, max_pending: null, rate: null }]]) {
    const page = await openPage(srv, `/locks/sem/${name}`);
    await until(() => page.$('#lock-limit'), 'the limit field');
    const before = await srv.api('GET', `/v1/semaphores/${name}?limit=0`);
    await page.fill('#lock-limit', String(before.limit + 1));
    await page.click('.lock-config form.limit-form button');
    await dialogText(page);
    await page.getByRole('button', { name: `Set the limit to ${before.limit + 1}` }).click();
    await until(async () => (await srv.api('GET', `/v1/semaphores/${name}?limit=0`)).limit === before.limit + 1, `${name}'s new limit`);
    const after = await srv.api('GET', `/v1/semaphores/${name}?limit=0`);
    assert.deepEqual(pick(after, Object.keys(want)), want, `${name}: its rules kept`);
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});
