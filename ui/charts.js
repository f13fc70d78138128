// charts.js - the lock page's charts, drawn as inline SVG by the page itself
// (no external script: the Content-Security-Policy allows only what sluiced
// serves). Two time series (slots used, claims pending) and the histogram of
// wait times with its percentiles marked, from the answer of
// GET /v1/history?lock=KEY&window=1h|24h.
//
// Each element carries its figures in data-* attributes (samples, maxima,
// bucket counts, percentile values) so that a test can compare them with the
// server's answer.
import { h, svg, clock, parseDuration } from './lib.js';

// An axis label: hours and minutes, with the date when it is not today.
function hm(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const t = d.toLocaleTimeString([], { hour12: false, hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === new Date().toDateString() ? t : `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${t}`;
}

const W = 640; // viewBox units; the SVG scales to its box
const HW = 900; // the histogram's width
const H = 170;
const PAD = { l: 40, r: 12, t: 12, b: 26 };

// A "nice" top for an axis: 1, 2, 5 times a power of ten, at least max.
function niceMax(max) {
  if (max <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

// One series over time: a step line (the value holds until the next
// sample), y from 0 to a nice maximum, the limit as a dashed line when given.
export function seriesChart({ samples, key, label, cls, limit = null }) {
  const values = samples.map((s) => s[key] ?? 0);
  const times = samples.map((s) => Date.parse(s.time));
  const max = Math.max(0, ...values);
  const top = niceMax(Math.max(max, limit ?? 0));
  const t0 = times[0];
  const t1 = times[times.length - 1];
  const x = (t) => PAD.l + (t1 > t0 ? ((t - t0) / (t1 - t0)) * (W - PAD.l - PAD.r) : 0);
  const y = (v) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b);
  let d = '';
  values.forEach((v, i) => {
    d += i === 0 ? `M${x(times[0]).toFixed(1)},${y(v).toFixed(1)}`
      : `H${x(times[i]).toFixed(1)}V${y(v).toFixed(1)}`;
  });
  const last = values.length ? values[values.length - 1] : 0;
  const grid = [0, top / 2, top].map((v) => [
    svg('line', { x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), class: 'grid' }),
    svg('text', { x: PAD.l - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'axis' }, Number.isInteger(v) ? v : v.toFixed(1)),
  ]);
  return h('figure', { class: 'chart', 'data-chart': key },
    h('figcaption', {}, label, h('span', { class: 'muted' }, ` — now ${last}, max ${max}`)),
    svg('svg', {
      viewBox: `0 0 ${W} ${H}`, role: 'img', class: `series ${cls}`,
      'aria-label': `${label}: ${samples.length} samples from ${clock(samples[0]?.time)} to ${clock(samples[samples.length - 1]?.time)}, maximum ${max}, now ${last}`,
      'data-samples': samples.length, 'data-max': max, 'data-last': last, 'data-sum': values.reduce((a, b) => a + b, 0),
    },
    grid,
    limit !== null && svg('line', { x1: PAD.l, x2: W - PAD.r, y1: y(limit), y2: y(limit), class: 'limit-line', 'data-limit': limit }),
    // The limit's label above its line, or under it when the line is at the top.
    limit !== null && svg('text', {
      x: W - PAD.r - 4, y: y(limit) < PAD.t + 16 ? y(limit) + 16 : y(limit) - 5, 'text-anchor': 'end', class: 'axis',
    }, `limit ${limit} (now)`),
    svg('path', { d, class: 'line', 'data-series': key }),
    svg('text', { x: PAD.l, y: H - 6, class: 'axis' }, hm(samples[0]?.time)),
    svg('text', { x: W - PAD.r, y: H - 6, 'text-anchor': 'end', class: 'axis' }, hm(samples[samples.length - 1]?.time))));
}

// Where a duration falls on the histogram's x axis: in the bucket whose
// upper bound first reaches it, interpolated between the bucket's bounds on
// a log scale (bucket bounds grow geometrically).
function bucketPos(ms, bounds) {
  for (let i = 0; i < bounds.length; i++) {
    const hi = bounds[i];
    if (hi === null) return i + 0.5; // the open bucket past the last bound
    if (ms <= hi) {
      const lo = i > 0 ? bounds[i - 1] : 0;
      if (lo <= 0 || ms <= lo) return i + (lo <= 0 ? Math.max(0, ms) / hi : 0);
      return i + Math.log(ms / lo) / Math.log(hi / lo);
    }
  }
  return bounds.length;
}

// The histogram of wait times: one bar per bucket (counts per bucket, not
// cumulative), p50, p90 and p99 as marked lines.
export function waitHistogram(waits) {
  const W = HW; // wider than the series: its box is wider, and its text keeps their size
  const buckets = waits.buckets || [];
  const bounds = buckets.map((b) => (b.le === null ? null : parseDuration(b.le)));
  const maxCount = Math.max(1, ...buckets.map((b) => b.count));
  const top = niceMax(maxCount);
  const bw = (W - PAD.l - PAD.r) / Math.max(1, buckets.length);
  const y = (v) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b);
  const every = Math.ceil(buckets.length / 8); // labels that fit
  const marks = ['p50', 'p90', 'p99'].filter((p) => waits[p] && waits.count > 0).map((p, i) => {
    const ms = parseDuration(waits[p]);
    const xx = PAD.l + bucketPos(ms, bounds) * bw;
    return svg('g', { class: `mark ${p}`, 'data-p': p, 'data-value': waits[p] },
      svg('line', { x1: xx, x2: xx, y1: PAD.t, y2: H - PAD.b }),
      svg('text', { x: xx + 3, y: PAD.t + 10 + i * 12, class: 'axis' }, `${p} ${waits[p]}`));
  });
  return h('figure', { class: 'chart', 'data-chart': 'waits' },
    h('figcaption', {}, `Wait before the grant, last ${waits.window}`,
      h('span', { class: 'muted' }, ` — ${waits.count} claims granted`)),
    svg('svg', {
      viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'histogram',
      'aria-label': `Wait times of ${waits.count} claims: p50 ${waits.p50}, p90 ${waits.p90}, p99 ${waits.p99}, max ${waits.max}`,
      'data-count': waits.count, 'data-buckets': buckets.length,
    },
    [0, top / 2, top].map((v) => [
      svg('line', { x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), class: 'grid' }),
      svg('text', { x: PAD.l - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'axis' }, Number.isInteger(v) ? v : v.toFixed(1))]),
    buckets.map((b, i) => svg('rect', {
      x: PAD.l + i * bw + 1, width: Math.max(1, bw - 2), y: y(b.count), height: H - PAD.b - y(b.count),
      class: 'bucket', 'data-le': b.le === null ? 'inf' : b.le, 'data-count': b.count,
    }, svg('title', {}, `${b.count} waited ${b.le === null ? `over ${buckets[i - 1]?.le ?? '0'}` : `up to ${b.le}`}`))),
    buckets.map((b, i) => (i % every === 0 || i === buckets.length - 1) && svg('text', {
      x: PAD.l + i * bw + bw / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis',
    }, b.le === null ? 'more' : `≤${b.le}`)),
    marks));
}

// The figures beside the histogram, as the server gives them.
export function waitFigures(waits) {
  const f = (k, label) => [h('dt', {}, label), h('dd', { 'data-wait': k }, waits[k] ?? '—')];
  return h('dl', { class: 'wait-figures' },
    [h('dt', {}, 'claims'), h('dd', { 'data-wait': 'count' }, waits.count)],
    f('p50', 'p50'), f('p90', 'p90'), f('p99', 'p99'), f('max', 'max'));
}

