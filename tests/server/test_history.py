#!/usr/bin/env python3
"""test_history.py - GET /v1/history?lock=KEY&window=..., black box
(docs/api.md).

The servers run with a 200 ms step (SLUICE_HISTORY_STEP_MS, read at start)
so that samples come quickly; every wait is on what the server reports
(samples, long polls), never a fixed sleep. Covered: samples follow grants,
releases and the queue; wait statistics match the claims' arrived and
granted times to the bucket; the window parameter; auth with a limited
token; 400 and 404; the samples before a restart (kill -9 and SIGTERM)
read the same after it, rebuilt from the event log; /metrics' per-lock wait
histograms (for live locks only: one-off mutexes leave none behind) and the
method label of sluice_http_requests_total.
"""
import calendar
import json
import os
import re
import time

import sluiced_fixture as fx
from sluiced_fixture import ServerTestCase, Sluiced, q, wait_until

STEP_MS = 200
os.environ["SLUICE_HISTORY_STEP_MS"] = str(STEP_MS)  # every server of this process, peers too

# The wait buckets' upper bounds in ms as the answer writes them, from 1 ms (waits
# are whole milliseconds); None is the last bucket, with no bound.
BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 30000,
             60000, 120000, 300000, 600000, 1200000, 1800000, 3600000, 7200000, 14400000,
             43200000, 86400000, None]


def ms_of_time(t):
    """RFC 3339 UTC with milliseconds -> Unix ms."""
    base = calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S"))
    return base * 1000 + int(t[20:23])


def ms_of_duration(d):
    """"0", "850ms", "4s", "1m2s", "1.2s", "1h" -> ms."""
    if d == "0":
        return 0
    m = re.match(r"^(\d+)ms$", d)
    if m:
        return int(m.group(1))
    m = re.match(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$", d)
    assert m and d, "not a duration: %r" % d
    h, mi, s = m.groups()
    return (int(h or 0) * 3600 + int(mi or 0) * 60) * 1000 + round(float(s or 0) * 1000)


def bucket_of(wait_ms):
    for i, b in enumerate(BOUNDS_MS):
        if b is None or wait_ms <= b:
            return i
    raise AssertionError("unreachable")


class HistoryCase(ServerTestCase):
    def name(self, suffix=""):
        base = "h/" + self._testMethodName
        return base + ("/" + suffix if suffix else "")

    def history(self, key, window=None, expect=200):
        url = "/v1/history?lock=" + q(key) + ("&window=" + window if window else "")
        r = self.srv.get(url)
        self.assertEqual(r.status, expect, r)
        return r.json

    def sem_history(self, name, **kw):
        return self.history("sem/" + name, **kw)

    def mtx_history(self, name, **kw):
        return self.history("mtx/" + name, **kw)

    def settled(self, fetch):
        """The history once the server has read its event log back."""
        return wait_until(lambda: (lambda h: h if not h["rebuilding"] else None)(fetch()), 30,
                          what="the history rebuilt")

    def wait_boundary(self, fetch, after_ms, want):
        """A history whose newest step boundary after after_ms shows want
        ((used, holders, pending))."""
        def ok():
            h = fetch()
            bounds = [s for s in h["samples"][:-1] if ms_of_time(s["time"]) > after_ms]
            if bounds and (bounds[-1]["used"], bounds[-1]["holders"],
                           bounds[-1]["pending"]) == want:
                return h
            return None
        return wait_until(ok, 20, what="a sample showing %r" % (want,))

    def assertShape(self, h, lock, window="1h"):
        self.assertEqual(h["lock"], lock)
        self.assertEqual(h["window"], window)
        self.assertEqual(h["step"], "200ms" if window == "1h" else "1.2s")
        self.assertIsInstance(h["rebuilding"], bool)
        times = [ms_of_time(s["time"]) for s in h["samples"]]
        self.assertEqual(times, sorted(times))
        step = STEP_MS if window == "1h" else 6 * STEP_MS
        for t in times[:-1]:
            self.assertEqual(t % step, 0, "a sample off the step boundaries")
        for a, b in zip(times[:-2], times[1:-1]):
            self.assertEqual(b - a, step)
        self.assertLessEqual(len(times), (360 if window == "1h" else 1440) + 1)
        w = h["waits"]
        self.assertEqual(w["window"], window)
        self.assertEqual(len(w["buckets"]), len(BOUNDS_MS))
        self.assertEqual([b["le"] and ms_of_duration(b["le"]) for b in w["buckets"]], BOUNDS_MS)
        self.assertEqual(sum(b["count"] for b in w["buckets"]), w["count"])


# ---------------------------------------------------------------------------
class TestSamples(HistoryCase):

    def test_samples_follow_grants_releases_and_the_queue(self):
        s = self.name("db")
        self.srv.sem_put(s, 2)
        fetch = lambda: self.sem_history(s)  # noqa: E731
        a = self.srv.claim("a", [("s", s)])
        b = self.srv.claim("b", [("s", s)])
        c = self.srv.claim("c", [("s", s)])
        self.assertEqual([x["state"] for x in (a, b, c)], ["held", "held", "pending"])
        h = self.wait_boundary(fetch, ms_of_time(c["arrived"]), (2, 2, 1))
        self.assertShape(h, "sem/" + s)
        self.assertEqual(h["samples"][-1]["used"], 2)  # the current values, last
        # Before the claims: idle.
        before = [x for x in h["samples"][:-1] if ms_of_time(x["time"]) <= ms_of_time(a["arrived"])]
        self.assertTrue(before)
        self.assertTrue(all((x["used"], x["holders"], x["pending"]) == (0, 0, 0)
                            for x in before))
        r = self.srv.release(a["id"])
        self.assertEqual(self.srv.claim_get(c["id"])["state"], "held")
        self.wait_boundary(fetch, ms_of_time(r["ended"]), (2, 2, 0))
        self.srv.release(b["id"])
        r = self.srv.release(c["id"])
        h = self.wait_boundary(fetch, ms_of_time(r["ended"]), (0, 0, 0))
        # Every state it went through is among the samples, in order.
        seen = []
        for x in h["samples"]:
            v = (x["used"], x["holders"], x["pending"])
            if not seen or seen[-1] != v:
                seen.append(v)
        self.assertIn((2, 2, 1), seen)
        after = seen[seen.index((2, 2, 1)):]
        self.assertIn((2, 2, 0), after)  # c granted in a's place
        self.assertEqual(after[-1], (0, 0, 0))

    def test_slots_count_in_used(self):
        s = self.name("pool")
        self.srv.sem_put(s, 5)
        a = self.srv.claim("a", [("s", s, 3), ("m", self.name("m"))])
        h = self.wait_boundary(lambda: self.sem_history(s), ms_of_time(a["granted"]), (3, 1, 0))
        self.assertShape(h, "sem/" + s)
        m = self.wait_boundary(lambda: self.mtx_history(self.name("m")),
                               ms_of_time(a["granted"]), (1, 1, 0))
        self.assertShape(m, "mtx/" + self.name("m"))
        self.srv.release(a["id"])

    def test_window_24h(self):
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        h = self.wait_boundary(lambda: self.mtx_history(m, window="24h"),
                               ms_of_time(a["granted"]), (1, 1, 0))
        self.assertShape(h, "mtx/" + m, window="24h")
        self.assertEqual(h["waits"]["window"], "24h")
        self.assertEqual(h["waits"]["count"], 1)
        one = self.mtx_history(m, window="1h")
        self.assertShape(one, "mtx/" + m)
        self.assertEqual(self.mtx_history(m)["window"], "1h")  # the default
        self.srv.release(a["id"])

    def test_never_seen_is_empty(self):
        s = self.name("quiet")
        self.srv.sem_put(s, 1)
        for h, lock in ((self.sem_history(s), "sem/" + s),
                        (self.mtx_history(self.name("never")), "mtx/" + self.name("never"))):
            self.assertShape(h, lock)
            self.assertEqual(h["samples"], [])
            self.assertEqual(h["waits"]["count"], 0)
            for k in ("p50", "p90", "p99", "max"):
                self.assertIsNone(h["waits"][k])

    def test_errors(self):
        self.assertError(self.srv.get("/v1/history?lock=sem/%s" % q(self.name("none"))), 404,
                         "not_found")
        self.srv.sem_put(self.name("pat-*"), 2)
        self.assertError(self.srv.get("/v1/history?lock=sem/%s" % q(self.name("pat-*"))), 400,
                         "bad_request", contains="history is per semaphore")
        self.assertError(self.srv.get("/v1/history?lock=mtx/%s" % q(self.name("pat-*"))), 400,
                         "bad_request")
        m = "/v1/history?lock=mtx/%s" % q(self.name("m"))
        self.assertError(self.srv.get(m + "&window=2h"), 400, "bad_request", contains="24h")
        self.assertError(self.srv.get(m + "&limit=3"), 400, "bad_request", contains="window")
        self.assertError(self.srv.get(m + "&window=1h&window=24h"), 400, "bad_request")
        self.assertError(self.srv.get("/v1/history"), 400, "bad_request", contains="lock=")
        self.assertError(self.srv.get("/v1/history?lock=db"), 400, "bad_request",
                         contains="mtx/NAME or sem/NAME")
        # A semaphore whose own name ends in /history is that semaphore.
        shadow = self.name("x/history")
        self.srv.sem_put(shadow, 3)
        self.assertEqual(self.srv.get("/v1/semaphores/" + q(shadow)).json["limit"], 3)
        self.assertError(self.srv.get("/v1/history?lock=sem/%s" % q("bad//name")), 400,
                         "bad_request")
        r = self.srv.post(m, {})
        self.assertError(r, 405, "method_not_allowed")


# ---------------------------------------------------------------------------
class TestWaits(HistoryCase):

    def test_wait_statistics_match_the_claims(self):
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        c = self.srv.claim("c", [("m", m)])
        # b and c wait until the server says 300 ms went by (a long poll).
        r = self.srv.get("/v1/claims/%s?wait=300ms" % b["id"])
        self.assertEqual(r.json["state"], "pending")
        self.srv.release(a["id"])
        r = self.srv.get("/v1/claims/%s?wait=100ms" % c["id"])
        self.srv.release(b["id"])
        self.srv.release(c["id"])
        claims = [self.srv.claim_get(x["id"]) for x in (a, b, c)]
        waits = [ms_of_time(x["granted"]) - ms_of_time(x["arrived"]) for x in claims]
        self.assertGreaterEqual(waits[1], 300)
        expect = [0] * len(BOUNDS_MS)
        for w in waits:
            expect[bucket_of(w)] += 1
        for window in ("1h", "24h"):
            h = self.mtx_history(m, window=window)
            self.assertShape(h, "mtx/" + m, window)
            st = h["waits"]
            self.assertEqual(st["count"], 3)
            self.assertEqual([x["count"] for x in st["buckets"]], expect)
            self.assertEqual(ms_of_duration(st["max"]), max(waits))
            ordered = sorted(waits)
            for key, rank in (("p50", 2), ("p90", 3), ("p99", 3)):
                true = ordered[rank - 1]
                got = ms_of_duration(st[key])
                bound = 0 if true == 0 else BOUNDS_MS[bucket_of(true)]
                self.assertEqual(got, min(bound, max(waits)), (key, waits, st))

    def test_metrics(self):
        m = self.name("m")
        a = self.srv.claim("a", [("m", m)])
        b = self.srv.claim("b", [("m", m)])
        self.srv.release(a["id"])
        self.mtx_history(m)
        # Scraped while b holds the mutex: a lock's series lasts as long as it.
        text = self.srv.get("/metrics").body.decode()
        self.srv.release(b["id"])
        key = "mtx/" + m
        self.assertIn("# TYPE sluice_lock_wait_seconds histogram\n", text)
        self.assertRegex(text, r'sluice_lock_wait_seconds_bucket\{lock="%s",le="0.0001"\} \d+\n'
                         % re.escape(key))
        self.assertIn('sluice_lock_wait_seconds_bucket{lock="%s",le="+Inf"} 2\n' % key, text)
        self.assertIn('sluice_lock_wait_seconds_count{lock="%s"} 2\n' % key, text)
        self.assertRegex(text, r'sluice_lock_wait_seconds_sum\{lock="%s"\} [0-9.]+\n'
                         % re.escape(key))
        # Buckets are cumulative and end at the count.
        counts = [int(x) for x in re.findall(
            r'sluice_lock_wait_seconds_bucket\{lock="%s",le="[^"]+"\} (\d+)' % re.escape(key),
            text)]
        self.assertEqual(counts, sorted(counts))
        self.assertEqual(len(counts), 30)
        self.assertRegex(text, r'sluice_http_requests_total\{route="/v1/history",'
                               r'method="GET",status="200"\} [1-9]')
        self.assertRegex(text, r'sluice_http_requests_total\{route="/v1/claims",method="POST",'
                               r'status="201"\} [1-9]')
        self.assertRegex(text, r'sluice_http_requests_total\{route="/v1/claims/\{id\}",'
                               r'method="DELETE",status="200"\} [1-9]')
        if fx.cluster_mode():
            own = self.srv.get("/metrics?server=self").body.decode()
            self.assertRegex(own, r'sluice_http_requests_total\{route="relayed",method="GET",'
                                  r'status="200"\} [1-9]')

    def test_metrics_keep_live_locks_only(self):
        # E5: one-off mutexes (a name per run) leave no series behind; a lock's
        # series goes with the lock, its counts joining lock="other".
        def scrape():
            return self.srv.get("/metrics").body.decode()

        def wait_lines(text):
            return [x for x in text.splitlines() if x.startswith("sluice_lock_wait_seconds")]

        def other(text):
            return int(re.search(r'sluice_lock_wait_seconds_count\{lock="other"\} (\d+)\n',
                                 text).group(1))

        kept = self.name("kept")
        held = self.srv.claim("keeper", [("m", kept)])
        before = scrape()
        kept_line = 'sluice_lock_wait_seconds_count{lock="mtx/%s"} 1\n' % kept
        self.assertIn(kept_line, before)
        self.assertRegex(before, r'sluice_build_info\{version="\d+\.\d+\.\d+[^"]*"\} 1\n')
        once = [self.name("once-%d" % i) for i in range(50)]
        for n in once:
            self.srv.release(self.srv.claim("run-" + n, [("m", n)])["id"])
        after = scrape()
        self.assertLessEqual(len(wait_lines(after)), len(wait_lines(before)))
        for n in once:
            self.assertNotIn('lock="mtx/%s"' % n, after)
        self.assertGreaterEqual(other(after) - other(before), 50)
        self.assertIn(kept_line, after)
        self.srv.release(held["id"])
        gone = scrape()
        self.assertNotIn('lock="mtx/%s"' % kept, gone)
        self.assertGreaterEqual(other(gone) - other(after), 1)


# ---------------------------------------------------------------------------
class TestAuth(HistoryCase):
    CONFIG = ("tokens:\n"
              "  - name: admin\n    token: \"adm-secret-0123456789\"\n    admin: true\n"
              "  - name: team\n    token: \"tm-secret-0123456789\"\n    prefixes: [\"team-a/\"]\n"
              "  - name: team-b\n    token: \"tmb-secret-0123456789\"\n"
              "    prefixes: [\"team-b/\"]\n")
    TOKEN = "adm-secret-0123456789"
    TM = "tm-secret-0123456789"
    TMB = "tmb-secret-0123456789"

    def test_one_tenant_cannot_evict_another_s_waits(self):
        # F13: team-a churns through more mutexes than the history tracks
        # (1000); team-b's one wait, older than all of them, stays.
        hist = "team-b/" + self._testMethodName
        r = self.srv.post("/v1/claims", {"holder": "team-b/job",
                                         "locks": [{"mutex": hist}]}, token=self.TMB)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.srv.delete("/v1/claims/" + r.json["id"], token=self.TMB).status, 200)
        before = self.srv.get("/v1/history?lock=mtx/" + q(hist), token=self.TMB).json["waits"]
        self.assertEqual(before["count"], 1)
        for i in range(18):  # 18 claims of 64 mutexes: 1152 locks
            locks = [{"mutex": "team-a/churn/%d-%d" % (i, j)} for j in range(64)]
            r = self.srv.post("/v1/claims", {"holder": "team-a/churn", "locks": locks},
                              token=self.TM)
            self.assertEqual(r.status, 201, r)
            self.assertEqual(self.srv.delete("/v1/claims/" + r.json["id"], token=self.TM).status,
                             200)
        after = self.srv.get("/v1/history?lock=mtx/" + q(hist), token=self.TMB).json["waits"]
        self.assertEqual(after["count"], 1, after)

    def test_limited_token_under_its_prefixes_only(self):
        self.srv.sem_put("team-a/db", 2)
        self.srv.sem_put("team-b/db", 2)
        r = self.srv.get("/v1/history?lock=sem/team-a/db", token=self.TM)
        self.assertEqual(r.status, 200, r)
        r = self.srv.get("/v1/history?lock=mtx/team-a/m&window=24h", token=self.TM)
        self.assertEqual(r.status, 200, r)
        self.assertError(self.srv.get("/v1/history?lock=sem/team-b/db", token=self.TM), 403,
                         "forbidden")
        self.assertError(self.srv.get("/v1/history?lock=mtx/other", token=self.TM), 403,
                         "forbidden")
        self.assertError(self.srv.get("/v1/history?lock=mtx/team-a/m", token=""), 401,
                         "unauthorized")
        self.assertEqual(self.srv.get("/v1/history?lock=sem/team-b/db").status, 200)


# ---------------------------------------------------------------------------
class TestRebuild(HistoryCase):
    """The samples and waits before a restart read the same after it, rebuilt
    from the event log (kill -9 and SIGTERM; in a cluster, a failover)."""

    def snapshot(self, fetch):
        h = self.settled(fetch)
        return h, {s["time"]: s for s in h["samples"][:-1]}

    def assertSameBefore(self, before, after, upto_ms, since_ms=0):
        """The samples of before up to upto_ms are in after, the same; but for
        those that left the window while the server restarted."""
        oldest = min(ms_of_time(t) for t in after)
        common = [t for t in before if oldest <= ms_of_time(t) <= upto_ms]
        self.assertTrue([t for t in common if ms_of_time(t) <= since_ms] or not since_ms,
                        "the restart took longer than the window")
        missing = [t for t in common if t not in after]
        self.assertEqual(missing, [])
        diff = [(t, before[t], after[t]) for t in common if before[t] != after[t]]
        self.assertEqual(diff, [])

    def test_rebuild_after_restarts(self):
        s, m = self.name("db"), self.name("m")
        self.srv.sem_put(s, 3)
        fetch_s = lambda: self.sem_history(s)  # noqa: E731
        fetch_s24 = lambda: self.sem_history(s, window="24h")  # noqa: E731
        fetch_m = lambda: self.mtx_history(m)  # noqa: E731
        held = self.srv.claim("a", [("s", s, 2), ("m", m)])
        b = self.srv.claim("b", [("s", s, 2)])
        c = self.srv.claim("c", [("m", m)])
        self.assertEqual(b["state"], "pending")
        self.srv.get("/v1/claims/%s?wait=250ms" % c["id"])
        x = self.srv.claim("x", [("s", s, 1)])
        self.srv.release(x["id"])
        w = self.srv.claim("w", [("m", "%s-other" % m)])
        self.srv.post("/v1/claims/%s/cancel" % b["id"])  # a pending claim canceled
        self.wait_boundary(fetch_s, ms_of_time(self.srv.claim_get(b["id"])["ended"]), (2, 1, 0))
        for hard in (True, False):
            with self.subTest(hard=hard):
                hs, before_s = self.snapshot(fetch_s)
                hs24, before_s24 = self.snapshot(fetch_s24)
                hm24, before_m = self.snapshot(lambda: self.mtx_history(m, window="24h"))
                before_m = self.snapshot(fetch_m)[1]
                upto = ms_of_time(hs["samples"][-1]["time"])
                self.srv.restart(hard=hard)
                after_s = self.snapshot(fetch_s)
                self.assertSameBefore(before_s, after_s[1], upto, ms_of_time(b["arrived"]))
                after_s24 = self.snapshot(fetch_s24)
                self.assertSameBefore(before_s24, after_s24[1], upto, ms_of_time(b["arrived"]))
                self.assertSameBefore(before_m, self.snapshot(fetch_m)[1], upto)
                # Waits over 24 h (the 1 h window's oldest slot may pass meanwhile).
                after_m24 = self.snapshot(lambda: self.mtx_history(m, window="24h"))
                self.assertEqual(after_m24[0]["waits"], hm24["waits"])
                self.assertEqual(after_s24[0]["waits"], hs24["waits"])
                self.assertEqual(hm24["waits"]["count"], 1)  # a; c waits behind it
                # Still held through the restart: the samples since show it.
                self.wait_boundary(fetch_s, upto + 1, (2, 1, 0))
        # A canceled held claim (expired or canceled tell held from pending by the
        # log's held flag): its end is replayed as a release.
        self.srv.post("/v1/claims/%s/cancel" % held["id"])
        ended = ms_of_time(self.srv.claim_get(held["id"])["ended"])
        h = self.wait_boundary(fetch_s, ended, (0, 0, 0))
        _, before = self.snapshot(fetch_s)
        upto = ms_of_time(h["samples"][-1]["time"])
        self.srv.restart(hard=True)
        self.assertSameBefore(before, self.snapshot(fetch_s)[1], upto)
        self.srv.release(c["id"])
        self.srv.release(w["id"])

    def test_rebuild_reads_a_long_log_in_pages(self):
        """More events than a page (5000): the server answers while it reads, and
        the result matches what it had."""
        m = self.name("busy")
        fetch = lambda: self.mtx_history(m)  # noqa: E731
        conn = self.srv.connect()
        try:
            for i in range(1800):  # 3 events a cycle: queued, acquired, released
                body = '{"holder": "h%d", "locks": [{"mutex": "%s"}]}' % (i, m)
                conn.request("POST", "/v1/claims", body=body,
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                cid = json.loads(r.read())["id"]
                conn.request("DELETE", "/v1/claims/" + cid)
                conn.getresponse().read()
        finally:
            conn.close()
        h, before = self.snapshot(fetch)
        upto = ms_of_time(h["samples"][-1]["time"])
        self.srv.restart(hard=True)
        after_h, after = self.snapshot(fetch)
        self.assertSameBefore(before, after, upto)
        self.assertEqual(self.settled(lambda: self.mtx_history(m, window="24h"))["waits"]["count"],
                         1800)
        if not fx.cluster_mode():  # in a cluster the leader that rebuilt is a peer
            self.assertIn("lock history rebuilt from the event log", self.srv.stderr())


if __name__ == "__main__":
    fx.main()
