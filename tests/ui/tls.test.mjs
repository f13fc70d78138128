// tls.test.mjs - the dashboard served by sluiced over HTTPS (docs/ui.md,
// "Over HTTPS"). A CA and the server's certificate are made at test time
// with the openssl command. Chromium trusts the server by its key alone:
// --ignore-certificate-errors-spki-list pins the SHA-256 of the server key's
// SubjectPublicKeyInfo, so a server with another key is still refused (the
// test checks that too), unlike a blanket "ignore HTTPS errors". The page
// loads, every request it makes goes to the same https:// origin (its URLs
// are relative), the live feed streams, and a claim is canceled from its page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  startServer, cleanup, openPage, until, text, dialogText, launch, shot, tmpDir,
} from './helpers.mjs';

let srv;
let stranger;

function openssl(dir, ...args) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

// A CA, and certificates for 127.0.0.1 and localhost signed by it.
function makeCerts(dir) {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(dir, 'req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=ui-test-ca');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const name of ['srv', 'other']) {
    openssl(dir, 'req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-days', '2',
      '-out', `${name}.pem`, '-extfile', 'san.ext');
  }
  const at = (f) => join(dir, f);
  return { srv: { cert: at('srv.pem'), key: at('srv.key'), ca: at('ca.pem') },
    other: { cert: at('other.pem'), key: at('other.key'), ca: at('ca.pem') } };
}

// What --ignore-certificate-errors-spki-list takes: base64 SHA-256 of the
// certificate's SubjectPublicKeyInfo (DER).
function spkiHash(certFile) {
  const spki = new X509Certificate(readFileSync(certFile)).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

before(async () => {
  const certs = makeCerts(tmpDir());
  srv = await startServer('tls', null, certs.srv);
  stranger = await startServer('tls-other', null, certs.other);
  await launch([`--ignore-certificate-errors-spki-list=${spkiHash(certs.srv.cert)}`]);
  await srv.api('PUT', '/v1/semaphores/db', { limit: 1 });
});

after(cleanup);

test('the dashboard over HTTPS: every request to its own origin, the live feed, a claim canceled', async () => {
  assert.match(srv.base, /^https:\/\/127\.0\.0\.1:\d+$/);
  const held = await srv.api('POST', '/v1/claims', { holder: 'tls/held', locks: [{ semaphore: 'db' }] });
  const waiting = await srv.api('POST', '/v1/claims', { holder: 'tls/waiting', locks: [{ semaphore: 'db' }] });
  assert.equal(waiting.state, 'pending');

  const b = await launch();
  const requests = [];
  const listen = (r) => requests.push(r.url());
  b.on('request', listen);
  const page = await openPage(srv, `/claims/${waiting.id}`);
  assert.equal(new URL(page.url()).origin, srv.base);
  await until(() => page.$('#live.on'), 'the event stream over HTTPS');
  await until(() => page.$('[data-action="cancel"]'), 'the cancel button');
  await page.click('[data-action="cancel"]');
  const d = await dialogText(page);
  assert.equal(d.title, 'Cancel this claim?');
  await page.getByRole('button', { name: 'Cancel the claim' }).click();
  await until(async () => (await srv.api('GET', `/v1/claims/${waiting.id}`)).state === 'canceled', 'canceled on the server');
  // The page learns it from the stream, over the same connection's origin.
  await until(() => page.$('.state[data-state="canceled"]'), 'the page to show canceled');
  assert.equal(await text(page, '[data-fact="reason"]'), 'canceled by an operator');
  await shot(page, 'tls-claim-canceled');
  b.off('request', listen);
  const elsewhere = requests.filter((u) => new URL(u).origin !== srv.base && !u.startsWith('data:'));
  assert.deepEqual(elsewhere, [], 'requests outside the page\'s https origin');
  assert.ok(requests.some((u) => u.includes('/v1/events/stream')), requests.join('\n'));
  assert.ok(requests.some((u) => u.endsWith(`/v1/claims/${waiting.id}/cancel`)), requests.join('\n'));
  assert.deepEqual(page.errors, []);
  await page.close();
  assert.equal((await srv.api('GET', `/v1/claims/${held.id}`)).state, 'held');
});

test('only the pinned key is trusted: a server with another key of the same CA is refused', async () => {
  const b = await launch();
  const page = await b.newPage();
  await assert.rejects(page.goto(`${stranger.base}/`), /ERR_CERT_AUTHORITY_INVALID/);
  await page.close();
});
