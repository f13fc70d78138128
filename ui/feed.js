// feed.js - the live feed: reads GET /v1/events/stream, lists the last
// events in the side panel and asks for a redraw on each one.
//
// The stream is read with fetch() rather than EventSource, because
// EventSource cannot send an Authorization header (a token in the URL would
// leak into logs and history); fetch streams the body and this file parses
// the "id:"/"data:" lines itself. When the stream is down the page refreshes
// every 5 s and the stream is retried. A limited token's stream carries the
// events of its prefixes only (the server filters it).
import { h, api, headers, clock, claimLink, lockHref, showAuthPrompt } from './lib.js';

const POLL_MS = 5000;
const FEED_MAX = 100;

const feed = {
  lastSeq: 0,
  pollTimer: null,
  streamAbort: null,
  onEvent: () => {},
  poll: () => {},
};

function setLive(on) {
  const el = document.getElementById('live');
  el.textContent = on ? 'live' : 'stream down: refreshing every 5 s';
  el.className = `live ${on ? 'on' : 'off'}`;
  clearInterval(feed.pollTimer);
  feed.pollTimer = on ? null : setInterval(feed.poll, POLL_MS);
}

function addToFeed(e) {
  const list = document.getElementById('feed');
  list.prepend(h('li', { 'data-type': e.type, 'data-seq': e.seq },
    h('time', { datetime: e.time }, clock(e.time)), ' ', h('strong', {}, e.type), ' ',
    e.claim ? claimLink(e.claim) : '', e.holder ? ` ${e.holder}` : '',
    e.actor ? h('span', { class: 'actor', title: 'who asked for it' }, ` · ${e.actor}`) : '',
    e.locks && e.locks.length ? [' ', e.locks.map((k, i) => [i ? ' ' : '', h('a', { href: lockHref(k), 'data-link': true }, k)])] : ''));
  while (list.children.length > FEED_MAX) list.lastElementChild.remove();
}

// Server-sent events: "id: N", "data: JSON", a blank line ends an event,
// lines starting with ":" are heartbeats.
async function stream() {
  for (;;) {
    const ctl = new AbortController();
    feed.streamAbort = ctl;
    try {
      const res = await fetch(`/v1/events/stream?since=${feed.lastSeq}`, {
        headers: headers({ Accept: 'text/event-stream' }), signal: ctl.signal, cache: 'no-store',
      });
      if (res.status === 401) {
        showAuthPrompt('This server needs a token: enter an API token above.');
        throw new Error('unauthorized');
      }
      if (!res.ok || !res.body) throw new Error(`stream: HTTP ${res.status}`);
      setLive(true);
      feed.poll();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      let data = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (line === '') {
            if (data.length) onEvent(data.join('\n'));
            data = [];
          } else if (line.startsWith('data:')) {
            data.push(line.slice(5).replace(/^ /, ''));
          }
        }
      }
    } catch (e) {
      if (ctl.signal.aborted && feed.streamAbort !== ctl) return; // replaced (new token)
    }
    if (feed.streamAbort !== ctl) return;
    setLive(false);
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (feed.streamAbort !== ctl) return;
  }
}

function onEvent(text) {
  let e;
  try { e = JSON.parse(text); } catch { return; }
  if (e.seq <= feed.lastSeq) return;
  feed.lastSeq = e.seq;
  addToFeed(e);
  feed.onEvent(e);
}

export function restartStream() {
  if (feed.streamAbort) {
    const old = feed.streamAbort;
    feed.streamAbort = null;
    old.abort();
  }
  stream();
}

// The feed starts with the last few events: /v1/status (the leader's, from
// any server) says which sequence number comes next. `onEvent` is called for
// each event, `poll` when the stream (re)connects and every 5 s while down.
export async function startFeed({ onEvent: on, poll }) {
  feed.onEvent = on;
  feed.poll = poll;
  setLive(false);
  try {
    const st = await api('/v1/status');
    feed.lastSeq = Math.max(0, (st.next_seq || 1) - 21);
  } catch { feed.lastSeq = 0; }
  restartStream();
}
