"""test_failover.py - shared mode's promises, one at a time, on a cluster of
three sluiced on one throwaway PostgreSQL (cluster.py):

- an answer relayed by a follower is the leader's, byte for byte;
- a claim whose commit was under way when the leader died is made once:
  the follower sends the creation again, with the key it added, to the
  next leader; it is never orphaned nor made twice;
- the new leader gives every held claim a full lease from the takeover,
  though the leaderless time was longer than the lease;
- a follower whose link to the leader freezes does not lead; its relayed
  requests get an answer (503) instead of hanging; after the link comes
  back it relays again.

Waits are on states the servers report, with deadlines. SLUICED names the
binary.
"""
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster import Cluster, request  # noqa: E402
from sluiced_fixture import wait_until  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

T_MS = 2000


def raw_get(port, path):
    """(status, body bytes) of a GET."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


class TestFailover(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(leader_timeout_ms=T_MS)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def setUp(self):
        # Every server up and one leading before each test.
        for s in self.c.servers:
            if s.stopped:
                s.signal(signal.SIGCONT)
            if not s.alive():
                s.start()
        self.lead = self.c.wait_leader()
        self.follow = [s for s in self.c.servers if s is not self.lead]

    def claim(self, port, holder, mutex, **extra):
        body = {"holder": holder, "locks": [{"mutex": mutex}]}
        body.update(extra)
        status, _, doc = request(port, "POST", "/v1/claims", body)
        self.assertEqual(status, 201, doc)
        return doc

    def test_relayed_answers_are_the_leaders_bytes(self):
        a = self.claim(self.lead.port, "bytes/a", "bytes/m", lease="1h")
        self.claim(self.lead.port, "bytes/b", "bytes/m")
        for path in ("/v1/claims/" + a["id"], "/v1/queue", "/v1/mutexes/bytes%2Fm",
                     "/v1/events?since=0&limit=5", "/v1/claims/nope", "/v1/nowhere",
                     "/v1/claims?holder=bytes/a"):
            want = raw_get(self.lead.port, path)
            for f in self.follow:
                self.assertEqual(raw_get(f.port, path), want, path)

    def test_claim_under_way_when_the_leader_dies_is_made_once(self):
        lock = subprocess.Popen(
            [os.path.join(self.c.pg.bin, "psql"), "-X", "-q", "-At", "-h", "127.0.0.1", "-p",
             str(self.c.pg.port), "-U", "postgres", "-d", "sluice"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        lock.stdin.write("BEGIN; LOCK TABLE log IN EXCLUSIVE MODE; SELECT 'locked';\n")
        lock.stdin.flush()
        self.assertEqual(lock.stdout.readline().strip(), "locked")
        got = {}

        def create():
            got["answer"] = request(self.follow[0].port, "POST", "/v1/claims",
                                    {"holder": "once/a", "locks": [{"mutex": "once/m"}]},
                                    timeout=60)
        t = threading.Thread(target=create)
        t.start()
        # The leader's commit of the claim waits on the lock; the leader dies.
        wait_until(lambda: "INSERT INTO log" in self.c.pg.psql(
            "SELECT string_agg(query, ' ') FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
            db="sluice"), 10, what="the leader's commit waiting")
        self.lead.kill9()
        lock.communicate("ROLLBACK;\n", timeout=30)
        t.join(60)
        status, _, doc = got["answer"]
        self.assertEqual(status, 201, doc)
        new = self.c.wait_leader()
        status, _, page = request(new.port, "GET", "/v1/claims?holder=once/a")
        self.assertEqual([c["id"] for c in page["claims"]], [doc["id"]])
        self.assertEqual(page["claims"][0]["state"], "held")

    def test_takeover_gives_every_held_claim_a_full_lease(self):
        a = self.claim(self.lead.port, "lease/a", "lease/m", lease="1s")
        self.assertEqual(a["state"], "held")
        old = self.lead
        old.signal(signal.SIGSTOP)
        try:
            # Nobody leads for about T = 2 s, longer than the 1 s lease.
            new = wait_until(lambda: next((s for s in self.follow if s.role() == "leader"), None),
                             20, poll_s=0.01, what="a takeover")
            status, _, doc = request(new.port, "GET", "/v1/claims/" + a["id"])
            self.assertEqual(doc["state"], "held", doc)
            # The renewal that the leaderless time prevented works now.
            status, _, doc = request(new.port, "POST", "/v1/claims/%s/renew" % a["id"])
            self.assertEqual(status, 200, doc)
            self.assertEqual(doc["state"], "held")
        finally:
            old.signal(signal.SIGCONT)
        wait_until(lambda: old.role() in ("follower", "campaigning"), 20,
                   what="the stopped leader deposed")

    def test_frozen_link_to_the_leader(self):
        f = self.follow[0]
        # The follower reaches the leader through a proxy: the leader is
        # started again advertising the proxy's address.
        self.lead.terminate()
        proxy = TcpProxy(self.lead.port)
        try:
            self.lead.advertise = "http://127.0.0.1:%d" % proxy.port
            self.lead.start()
            for s in self.follow:
                s.terminate()
            self.lead = wait_until(lambda: self.lead if self.lead.role() == "leader" else None,
                                   20, what="the proxied server leading")
            for s in self.follow:
                s.start()
            wait_until(lambda: f.role() == "follower", 10, what="following")
            self.claim(f.port, "frozen/a", "frozen/m")
            proxy.set("freeze")
            t0 = time.monotonic()
            status, _, doc = request(f.port, "GET", "/v1/queue", timeout=60)
            took = time.monotonic() - t0
            self.assertEqual(status, 503, doc)
            self.assertLess(took, 20)
            self.assertEqual(f.role(), "follower")
            self.assertEqual(self.lead.role(), "leader")
            proxy.set("pass")
            status, _, doc = request(f.port, "GET", "/v1/claims?holder=frozen/a")
            self.assertEqual(status, 200)
            self.assertEqual(len(doc["claims"]), 1)
        finally:
            self.lead.terminate()
            self.lead.advertise = None
            proxy.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
