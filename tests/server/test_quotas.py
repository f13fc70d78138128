#!/usr/bin/env python3
"""test_quotas.py - per-token quotas and the admins' share of the global
limits (F4 and F5 in docs/security.md, "Quotas").

F4's reproduction scaled down: one limited token with small quotas (set in
the test's configuration) keeps making claims, waiting claims, semaphore
configurations, event streams, long polls and requests; past each quota it
gets 429 quota_exceeded with Retry-After, the others are still served, and
a restart keeps the claim counts (they come from each claim's `actor`).
F5's: a limited token fills max_claims, max_semaphores and max_streams up
to their last tenth, which an admin still gets; a semaphore new in the
file applies at start however many the API made.
"""
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase, wait_until  # noqa: E402

ADMIN = "adm-secret-0123456789"
SECRETS = {n: n + "-secret-0123456789"
           for n in ("claims", "waiting", "sems", "streams", "polls", "rate", "big")}
QUOTAS = {
    "claims": "{claims: 3}",
    "waiting": "{waiting: 2}",
    "sems": "{semaphores: 2}",
    "streams": "{streams: 2}",
    "polls": "{long_polls: 2}",
    "rate": "{requests_per_second: 1, burst: 5}",
    "big": "{claims: 0, waiting: 0, semaphores: 0, streams: 0}",  # 0: none
}


def tokens():
    out = 'tokens:\n  - {name: admin, token: "%s", admin: true}\n' % ADMIN
    for name, secret in SECRETS.items():
        out += '  - {name: t-%s, token: "%s", prefixes: ["%s/"], quotas: %s}\n' % (
            name, secret, name, QUOTAS[name])
    return out


def refused(srv, quota):
    text = srv.get("/metrics", token=ADMIN).body.decode()
    m = re.search(r'^sluice_quota_refused_total\{quota="%s"\} (\d+)$' % quota, text, re.M)
    return int(m.group(1)) if m else None


class QuotaCase(ServerTestCase):
    TOKEN = ADMIN

    def as_(self, who):
        return SECRETS[who]

    def claim(self, who, lock, **fields):
        body = {"holder": "%s/run" % who, "locks": [{"mutex": "%s/%s" % (who, lock)}]}
        body.update(fields)
        return self.srv.post("/v1/claims", body, token=self.as_(who))

    def started(self, path, who, keep):
        """A GET that would stream or park if let through: a Response when
        it is answered at once, else kept open in keep (closed by the test)."""
        conn, resp = self.srv.start_request("GET", path, token=self.as_(who))
        if resp.status == 200:
            keep.append((conn, resp))
            return fx.Response(200, {}, b"")
        got = fx.Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        conn.close()
        return got

    def assertQuota(self, r, quota, value):
        self.assertError(r, 429, "quota_exceeded")
        self.assertEqual(r.headers.get("retry-after"), "1", r)
        msg = r.json["error"]["message"]
        self.assertIn("quota of %d" % value, msg)
        self.assertIn("limits.token_quotas.%s" % quota, msg)


class TestTokenQuotas(QuotaCase):
    """F4: each quota of one limited token, the others served meanwhile."""
    CONFIG = tokens()

    def test_live_claims(self):
        ids = [self.claim("claims", "m%d" % i).json["id"] for i in range(3)]
        r = self.claim("claims", "m9")
        self.assertQuota(r, "claims", 3)
        self.assertIn("release or withdraw", r.json["error"]["message"])
        self.assertEqual(self.srv.claim_get(ids[0])["actor"], "t-claims")
        # Admins have no quota; another tenant is not held back.
        self.assertEqual(self.srv.claim("ops/x", [("m", "ops/m")])["state"], "held")
        self.assertEqual(self.claim("big", "m").status, 201)
        self.srv.release(ids[0])
        self.assertEqual(self.claim("claims", "m9").status, 201)
        self.assertGreaterEqual(refused(self.srv, "claims"), 1)

    def test_waiting_claims(self):
        held = self.claim("waiting", "q")
        self.assertEqual(held.json["state"], "held")
        for _ in range(2):
            self.assertEqual(self.claim("waiting", "q").json["state"], "pending")
        r = self.claim("waiting", "other")  # free, but two of its claims wait
        self.assertQuota(r, "waiting", 2)
        self.srv.release(held.json["id"])  # one of the waiters is granted
        self.assertEqual(self.claim("waiting", "other").status, 201)

    def test_semaphore_configurations(self):
        for i in range(2):
            r = self.srv.put("/v1/semaphores/sems%%2Fs%d" % i, {"limit": 1}, token=self.as_("sems"))
            self.assertEqual(r.status, 200, r)
        r = self.srv.put("/v1/semaphores/sems%2Fs2", {"limit": 1}, token=self.as_("sems"))
        self.assertQuota(r, "semaphores", 2)
        # Changing one it has is no new configuration.
        r = self.srv.put("/v1/semaphores/sems%2Fs0", {"limit": 3}, token=self.as_("sems"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.srv.delete("/v1/semaphores/sems%2Fs1",
                                         token=self.as_("sems")).status, 204)
        r = self.srv.put("/v1/semaphores/sems%2Fs2", {"limit": 1}, token=self.as_("sems"))
        self.assertEqual(r.status, 200, r)

    def test_event_streams(self):
        opened = [self.srv.start_request("GET", "/v1/events/stream", token=self.as_("streams"))
                  for _ in range(2)]
        try:
            for _, resp in opened:
                self.assertEqual(resp.status, 200)
            self.assertQuota(self.started("/v1/events/stream", "streams", opened), "streams", 2)
            # One closed is one free, once the server has seen it go.
            opened[0][0].close()

            def another():
                conn, resp = self.srv.start_request("GET", "/v1/events/stream",
                                                    token=self.as_("streams"))
                if resp.status == 200:
                    opened.append((conn, resp))
                    return True
                resp.read()
                conn.close()
                return False
            wait_until(another, 10, what="a stream once one closed")
        finally:
            for conn, _ in opened:
                conn.close()

    def test_long_polls(self):
        pending = [self.srv.start_request("GET", "/v1/events?since=999999999&wait=20s",
                                          token=self.as_("polls")) for _ in range(2)]
        try:
            for _, resp in pending:
                self.assertEqual(resp.status, 200)
            r = self.started("/v1/events?since=999999999&wait=20s", "polls", pending)
            self.assertQuota(r, "long_polls", 2)
            # A claim that asks to wait is refused before it is made.
            r = self.claim("polls", "m", wait="10s")
            self.assertQuota(r, "long_polls", 2)
            mine = self.srv.get("/v1/claims?run=polls/run", token=self.as_("polls")).json
            self.assertEqual(mine["claims"], [])
            # Without wait it is served.
            self.assertEqual(self.srv.get("/v1/events?since=0&limit=1",
                                          token=self.as_("polls")).status, 200)
        finally:
            for conn, _ in pending:
                conn.close()

    def test_requests_per_second(self):
        # A bucket of 5 that refills at 1/s: sent back to back, at most
        # 5 + the seconds taken (+1 for the refill's rounding) pass.
        t0 = time.monotonic()
        statuses = []
        conn = self.srv.connect()
        try:
            for _ in range(40):
                conn.request("GET", "/v1/status", headers={"Authorization": "Bearer "
                                                           + self.as_("rate")})
                r = conn.getresponse()
                body = r.read()
                statuses.append(r.status)
                if r.status == 429:
                    self.assertEqual(r.getheader("Retry-After"), "1")
                    self.assertIn(b"1 requests per second", body)
                    break
        finally:
            conn.close()
        took = time.monotonic() - t0
        self.assertEqual(statuses[-1], 429, statuses)
        self.assertLessEqual(statuses.count(200), 5 + int(took) + 1)
        self.assertGreaterEqual(statuses.count(200), 5)
        self.assertEqual(self.srv.get("/v1/status").status, 200)  # the admin is not limited
        self.assertGreaterEqual(refused(self.srv, "requests_per_second"), 1)


class TestCountsAfterRestart(QuotaCase):
    """The claims a token holds are counted from the store after a restart
    (each claim's actor), so a restart is no way around the quota."""
    CONFIG = tokens()

    def test_restart_keeps_the_counts(self):
        for i in range(3):
            self.assertEqual(self.claim("claims", "r%d" % i).status, 201)
        self.assertQuota(self.claim("claims", "r9"), "claims", 3)
        self.srv.restart()
        self.assertQuota(self.claim("claims", "r9"), "claims", 3)
        listed = self.srv.get("/v1/claims?run=claims/run").json["claims"]
        self.assertEqual({c["actor"] for c in listed}, {"t-claims"})


@unittest.skipIf(fx.cluster_mode(), "the test signals the server it talks to, not the leader")
class TestReload(QuotaCase):
    """SIGHUP: a quota changed in the file counts from the next request."""
    CONFIG = tokens()

    def test_a_raised_quota_counts_at_once(self):
        for i in range(3):
            self.assertEqual(self.claim("claims", "l%d" % i).status, 201)
        self.assertQuota(self.claim("claims", "l9"), "claims", 3)
        with open(self.srv.config_path, "w") as f:
            f.write(tokens().replace("{claims: 3}", "{claims: 4}"))
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.claim("claims", "l9").status == 201, 10,
                   what="the raised quota")
        self.assertQuota(self.claim("claims", "l10"), "claims", 4)


FILE_SEMS = 'semaphores:\n  - {name: "ops/file", limit: 1}\n'
SHARES = ("limits:\n  max_claims: 20\n  max_semaphores: 10\n  max_streams: 10\n" + tokens())


class TestAdminShare(QuotaCase):
    """F5: a limited token without quotas fills each global limit up to
    nine tenths; the last tenth is the admins'."""
    CONFIG = SHARES + FILE_SEMS

    def test_claims(self):
        made = 0
        while True:
            r = self.claim("big", "c%d" % made)
            if r.status != 201:
                break
            made += 1
        self.assertEqual(made, 18)  # 20 - 20 // 10
        self.assertError(r, 503, "unavailable", "kept for admin tokens")
        self.assertEqual(self.srv.claim("ops/x", [("m", "ops/m")])["state"], "held")
        self.srv.delete("/v1/claims?holder_prefix=big/")

    @unittest.skipIf(fx.cluster_mode(), "the test writes the file of the server it talks to, "
                     "not the leader's")
    def test_semaphores_and_the_file(self):
        made = 0
        while True:
            r = self.srv.put("/v1/semaphores/big%%2Fs%d" % made, {"limit": 1},
                             token=self.as_("big"))
            if r.status != 200:
                break
            made += 1
        self.assertEqual(made, 8)  # ops/file is one of the 9 open to limited tokens
        self.assertError(r, 503, "unavailable", "kept for admin tokens")
        self.assertEqual(self.srv.sem_put("ops/new", 1)["name"], "ops/new")  # the 10th
        r = self.srv.put("/v1/semaphores/ops%2Fnew2", {"limit": 1})
        self.assertError(r, 503, "unavailable", "limits.max_semaphores")
        # The limit is the API's: a semaphore new in the file applies at
        # start all the same (it was dropped with an error before).
        with open(self.srv.config_path, "w") as f:
            f.write(SHARES + FILE_SEMS + '  - {name: "ops/from-file", limit: 2}\n')
        self.srv.restart()
        self.assertEqual(self.srv.get("/v1/semaphores/ops%2Ffrom-file").status, 200)

    def test_streams(self):
        opened = []
        try:
            while True:
                conn, resp = self.srv.start_request("GET", "/v1/events/stream",
                                                    token=self.as_("big"))
                if resp.status != 200:
                    body = resp.read()
                    conn.close()
                    break
                opened.append((conn, resp))
            self.assertEqual(len(opened), 9)
            self.assertEqual(resp.status, 503)
            self.assertIn(b"kept for admin tokens", body)
            conn, resp = self.srv.start_request("GET", "/v1/events/stream")
            opened.append((conn, resp))
            self.assertEqual(resp.status, 200)
        finally:
            for conn, _ in opened:
                conn.close()


if __name__ == "__main__":
    fx.main()
