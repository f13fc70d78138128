// helpers.mjs - what the dashboard's browser tests share: a sluiced of their
// own on a free port below 32768 (so that no outgoing connection can hold
// it), headless Debian chromium through playwright-core (which never
// downloads a browser), waits that poll with a deadline (never a fixed
// sleep), reads of the page in one evaluation, and screenshots.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

export const SLUICED = process.env.SLUICED;
export const ARTIFACTS = resolve(process.env.UI_ARTIFACTS || 'artifacts');
const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const DEADLINE_MS = 15000;
export const DESKTOP = { width: 1400, height: 900 };
export const PHONE = { width: 390, height: 844 };

// Utilization colours of style.css (--ok, --warn, --crit).
export const GREEN = 'rgb(46, 158, 79)';
export const YELLOW = 'rgb(217, 164, 0)';
export const RED = 'rgb(210, 54, 43)';

const servers = [];
let tmp;
let browser;

export function tmpDir() {
  tmp ??= mkdtempSync(join(tmpdir(), 'sluice-ui-'));
  mkdirSync(ARTIFACTS, { recursive: true });
  return tmp;
}

// A random port in 20000..32000 that nothing listens on.
async function freePort() {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const ok = await new Promise((done) => {
      const s = createServer();
      s.once('error', () => done(false));
      s.listen(port, '127.0.0.1', () => s.close(() => done(true)));
    });
    if (ok) return port;
  }
}

export async function until(fn, what, deadline = DEADLINE_MS) {
  const end = Date.now() + deadline;
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

// One request: fetch, or over HTTPS node's https with the test's CA (fetch
// takes no CA of its own). {status, text}.
async function send(url, { method = 'GET', headers = {}, body, ca } = {}) {
  if (!ca) {
    const res = await fetch(url, { method, headers, body });
    return { status: res.status, text: await res.text() };
  }
  return new Promise((done, fail) => {
    const req = httpsRequest(url, { method, headers, ca }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => done({ status: res.statusCode, text }));
    });
    req.on('error', fail);
    req.end(body);
  });
}

// A sluiced of its own: {base, api(method, path, body, token), raw(...)}.
// With tls {cert, key, ca} (PEM file paths) it serves HTTPS, and the test's
// own requests check its certificate against ca.
export async function startServer(name, configYaml, tls = null) {
  assert.ok(SLUICED, 'set SLUICED to the sluiced binary');
  const dir = join(tmpDir(), name);
  mkdirSync(dir);
  const ca = () => tls && readFileSync(tls.ca);
  let port;
  let proc;
  let exited;
  let base;
  // A port found free may be taken before sluiced binds it: try another.
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    const args = ['--listen', `127.0.0.1:${port}`, '--store', `sqlite:${join(dir, `sluice-${attempt}.db`)}`,
      '--log-level', 'warn'];
    if (configYaml) {
      writeFileSync(join(dir, 'sluice.yaml'), configYaml);
      args.push('--config', join(dir, 'sluice.yaml'));
    }
    if (tls) args.push('--tls-cert', tls.cert, '--tls-key', tls.key);
    proc = spawn(SLUICED, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    exited = new Promise((r) => proc.on('exit', (code, sig) => r({ code, sig, done: true })));
    base = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    const up = await Promise.race([
      until(async () => (await send(`${base}/healthz`, { ca: ca() })).status === 200, `${name} to answer /healthz`).then(() => true),
      exited.then(() => false),
    ]);
    if (up) break;
    assert.ok(attempt < 3, `${name}: sluiced did not start`);
  }
  servers.push({ proc, exited });
  const raw = async (method, path, body, token) => {
    const headers = { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const res = await send(base + path, { method, headers, body: body && JSON.stringify(body), ca: ca() });
    return { status: res.status, body: res.text ? JSON.parse(res.text) : null };
  };
  return {
    base,
    raw,
    async api(method, path, body, token) {
      const r = await raw(method, path, body, token);
      assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
  };
}

// The browser of this test file, launched on first use; `extraArgs` count
// only then (tls.test.mjs pins its server's key with them).
export async function launch(extraArgs = []) {
  browser ??= await chromium.launchPersistentContext(join(tmpDir(), 'profile'), {
    executablePath: CHROMIUM, headless: true, args: [...ARGS, ...extraArgs], viewport: DESKTOP,
  });
  return browser;
}

export async function cleanup() {
  if (browser) await browser.close();
  for (const s of servers) {
    s.proc.kill('SIGTERM');
    const { code, sig } = await s.exited;
    // A clean shutdown: sanitizer builds report leaks and errors by exit code.
    assert.ok(code === 0 || sig === 'SIGTERM', `sluiced exited with ${code} ${sig}`);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}

// A new tab on `path`, once drawn; page.errors collects script errors.
export async function openPage(server, path, viewport = DESKTOP) {
  const b = await launch();
  const page = await b.newPage();
  await page.setViewportSize(viewport);
  page.openedAt = Date.now(); // every text the page draws is written after this
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 40[0345]/.test(m.text())) errors.push(m.text()); });
  await page.goto(server.base + path);
  await until(() => page.$('body[data-rendered]'), `${path} to render`);
  page.errors = errors;
  return page;
}

// A countdown's "(in 9m 58s)" (lib.js's span) checked against the server's
// time `iso` it counts to (revoke_at, expires): the page wrote the text at
// some moment since it was opened (page.openedAt, set by openPage) and
// rounded it to the second (from an hour on, "1h 0m": to the minute below),
// so what it shows lies between the time left now and the time left at the
// opening, however loaded the machine. Returns the text.
export async function assertCountdown(page, sel, iso) {
  const t = await text(page, sel);
  const now = Date.now();
  const m = t.match(/\(in (?:(\d+)h (\d+)m|(?:(\d+)m )?(\d+)s)\)/);
  assert.ok(m, `${sel}: no "(in ...)" in "${t}"`);
  const hours = m[1] !== undefined;
  const shown = hours ? Number(m[1]) * 3600 + Number(m[2]) * 60 : Number(m[3] || 0) * 60 + Number(m[4]);
  const at = Date.parse(iso);
  const low = (at - now) / 1000 - (hours ? 60.5 : 0.5);
  const high = (at - page.openedAt) / 1000 + 0.5;
  assert.ok(shown >= low && shown <= high,
    `${sel}: "${t}" shows ${shown} s left; ${low.toFixed(1)} to ${high.toFixed(1)} s were left between the page's opening and now (${iso})`);
  return t;
}

// A page drawn again since `since` (body[data-rendered] is the time of the
// last draw).
export async function redrawnSince(page, since) {
  return until(async () => Number(await page.evaluate(() => document.body.dataset.rendered || 0)) > since, 'a redraw');
}

export async function shot(page, name, fullPage = true) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });
}

// Desktop and phone screenshots of what the page shows now.
export async function shots(page, name, fullPage = true) {
  await page.setViewportSize(DESKTOP);
  await shot(page, `${name}-desktop`, fullPage);
  await page.setViewportSize(PHONE);
  await shot(page, `${name}-phone`, fullPage);
  await page.setViewportSize(DESKTOP);
}

// Every read of the page finds its elements and reads them in one
// page.evaluate, never page.$eval: $eval finds the element in one round trip
// and reads it in a second, and a redraw in between (each event redraws)
// detaches it.
export const text = (page, sel) => page.evaluate((s) => {
  const el = document.querySelector(s);
  if (!el) throw new Error(`nothing matches ${s}`);
  return el.textContent.trim().replace(/\s+/g, ' ');
}, sel);
export const texts = (page, sel) => page.evaluate((s) => [...document.querySelectorAll(s)].map((el) => el.textContent.trim().replace(/\s+/g, ' ')), sel);
export const count = (page, sel) => page.evaluate((s) => document.querySelectorAll(s).length, sel);
export const attrs = (page, sel, name) => page.evaluate(([s, n]) => [...document.querySelectorAll(s)].map((el) => el.getAttribute(n)), [sel, name]);

// Width of a bar as a percentage of its track, and its colour.
export async function bar(page, sel) {
  return page.evaluate((s) => {
    const el = document.querySelector(`${s} .bar-fill`);
    if (!el) throw new Error(`no bar in ${s}`);
    return {
      pct: Math.round((el.getBoundingClientRect().width / el.parentElement.getBoundingClientRect().width) * 100),
      colour: getComputedStyle(el).backgroundColor,
    };
  }, sel);
}

// What of a page's layout is wrong, in words: each element matched by
// `cells` (within `root`) must have a size and lie within the box of `box`
// (the viewport when null), a time on one line, a holder on three lines at
// most, and no .table-wrap under `root` may scroll sideways; nor the page.
export function layoutProblems(page, root, box, cells) {
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

// The confirmation dialog's title and text, once it shows.
export async function dialogText(page) {
  await until(() => page.$('dialog.confirm[open]'), 'the confirmation');
  return page.evaluate(() => {
    const d = document.querySelector('dialog.confirm[open]');
    return { title: d.querySelector('h2').textContent, body: [...d.querySelectorAll('p')].map((p) => p.textContent).join(' ') };
  });
}
