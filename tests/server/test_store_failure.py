"""sluiced when its store cannot commit (docs/api.md, "Effects and commits").

The fixture makes every commit fail, the way a full disk or a broken file
would: a trigger on PostgreSQL's log table, or the SQLite store's test-only
fault file, read before each append to its log file. The change in flight
is answered 503 ("not confirmed"), /healthz turns 503, changes are
refused; once the fault is lifted the writer's retry (every second)
commits the same batch, the server serves again, and what was answered
before the failure, and the batch that was retried, survive a restart."""
import json
import os
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sluiced_fixture import (ServerTestCase, Sluiced, cluster_mode, free_port,  # noqa: E402
                             health, wait_until)
from test_client_gone import server_rx_queue  # noqa: E402

RECOVERY_DEADLINE_S = 15


@unittest.skipIf(cluster_mode(), "one server's own store failure: its /healthz and log are "
                 "the leader's, checked on a single server (sqlite and postgres runs)")
class TestStoreFailure(ServerTestCase):

    def assertUnavailable(self, r):
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json["error"]["code"], "unavailable", r)

    def test_commit_fails_then_recovers(self):
        srv = self.srv
        before = srv.claim("before", [("m", "sf/a")])
        self.assertEqual(before["state"], "held")
        srv.block_commits("sf_block")
        try:
            r = srv.post("/v1/claims", {"holder": "during", "locks": [{"mutex": "sf/b"}]})
            self.assertUnavailable(r)
            self.assertIn("not confirmed", r.json["error"]["message"])
            health = srv.get("/healthz")
            self.assertEqual(health.status, 503)
            # /healthz says why (it once said "the store cannot commit: ").
            self.assertIn("injected failure", health.json["error"]["message"])
            # While the store fails, changes are refused at once.
            self.assertUnavailable(srv.post("/v1/claims",
                                            {"holder": "refused", "locks": [{"mutex": "sf/c"}]}))
            self.assertUnavailable(srv.delete("/v1/claims/" + before["id"]))
            # A read is not told its outcome is unknown: it changed nothing.
            read = srv.get("/v1/claims/" + before["id"])
            self.assertUnavailable(read)
            self.assertIn("not stored yet", read.json["error"]["message"])
            self.assertNotIn("outcome", read.json["error"]["message"])
        finally:
            srv.unblock_commits("sf_block")
        wait_until(lambda: srv.get("/healthz").status == 200, RECOVERY_DEADLINE_S,
                   what="/healthz 200 after the store recovers")
        # The batch that failed was committed by the retry: its claim exists.
        during = srv.get("/v1/claims?holder=during").json["claims"]
        self.assertEqual([c["state"] for c in during], ["held"])
        self.assertEqual(srv.get("/v1/claims?holder=refused").json["claims"], [])
        self.assertEqual(srv.claim_get(before["id"])["state"], "held")
        self.assertIn("store commit failed", srv.stderr())
        self.assertIn("store commits again", srv.stderr())
        # Changes are accepted again, and everything survives a restart.
        after = srv.claim("after", [("m", "sf/d")])
        srv.restart()
        for cid in (before["id"], during[0]["id"], after["id"]):
            self.assertEqual(srv.claim_get(cid)["state"], "held")
            srv.release(cid)
        types = [e["type"] for e in srv.all_events(0) if e.get("claim") == during[0]["id"]]
        self.assertEqual(types[:2], ["claim.queued", "claim.acquired"])



class TestStoreFailureFull(TestStoreFailure):
    """The same with --durability full, whose commit is two steps with a log
    file (docs/store.md "Commits and durability"): the append on the loop,
    the fdatasync on the writer thread, the answers after it."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Sluiced(durability="full")
        cls._failed = False

    def test_concurrent_commits_survive_kill9(self):
        """Claims from 8 threads at once (their commits grouped under a sync
        or appended while one runs): each answered claim survives kill -9."""
        srv = self.srv
        ids = []

        def claim(i):
            for k in range(5):
                ids.append(srv.claim("full-%d" % i, [("m", "sf/full/%d/%d" % (i, k))])["id"])

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(ids), 40)
        srv.restart(hard=True)
        for cid in ids:
            self.assertEqual(srv.claim_get(cid)["state"], "held")
            srv.release(cid)


def send_claim(srv, holder, mutex):
    """POST /v1/claims on a connection of its own, returned once the server
    has read the request (its receive queue is empty): the loop has taken
    it before it turns to anything else, such as the end of a sync."""
    s = srv.raw_socket(timeout=30)
    body = json.dumps({"holder": holder, "locks": [{"mutex": mutex}]}).encode()
    s.sendall(b"POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    wait_until(lambda: server_rx_queue(srv.port, s.getsockname()[1]) == 0, 10,
               what="the server reading %s's claim" % holder)
    return s


def answer(s):
    """The status and JSON body of the answer on s (then closed)."""
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


@unittest.skipIf(cluster_mode(), "one server's own store and fault file (as TestStoreFailure)")
class TestCommitFailsAfterGoodSync(ServerTestCase):
    """--durability full appends the next batch when a sync ends, before the
    synced batch's answers go (docs/api.md, "Effects and commits"). When
    that append fails, the synced batch is still answered as committed, the
    failed one 503, and the retry commits the failed one (the same batch,
    once): after kill -9 the state holds both, nothing answered is lost."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Sluiced(durability="full")
        cls._failed = False

    def test_synced_answered_failed_retried(self):
        srv = self.srv
        if srv.pg_db:
            self.skipTest("the SQLite store's fault file holds its syncs")
        before = srv.claim("gs-before", [("m", "gs/a")])
        held = srv.fault_path + ".held"
        srv._commit_fault("hold sync")
        try:
            synced = send_claim(srv, "gs-synced", "gs/b")  # appended, its sync held
            wait_until(lambda: os.path.exists(held), 10, what="the first batch's sync held")
            failed = send_claim(srv, "gs-failed", "gs/c")  # the next batch, gathered
            srv._commit_fault("fail injected failure")  # the sync ends; the next append fails
            st_synced, a = answer(synced)
            st_failed, b = answer(failed)
        finally:
            srv.unblock_commits("gs")
            if os.path.exists(held):
                os.unlink(held)
        self.assertEqual(st_synced, 201, a)  # answered as committed
        self.assertEqual(a["state"], "held")
        self.assertEqual(st_failed, 503, b)
        self.assertEqual(b["error"]["code"], "unavailable", b)
        self.assertIn("not confirmed", b["error"]["message"])
        self.assertIn("injected failure", srv.stderr())
        wait_until(lambda: srv.get("/healthz").status == 200, RECOVERY_DEADLINE_S,
                   what="/healthz 200 after the store recovers")
        retried = srv.get("/v1/claims?holder=gs-failed").json["claims"]
        self.assertEqual([c["state"] for c in retried], ["held"])
        srv.restart(hard=True)
        holders = {}
        for c in srv.get("/v1/claims?state=held").json["claims"]:
            if c["holder"].startswith("gs-"):
                holders[c["holder"]] = c["id"]
        self.assertEqual(holders, {"gs-before": before["id"], "gs-synced": a["id"],
                                   "gs-failed": retried[0]["id"]})
        # The retry committed the failed batch once: one grant, not two.
        types = [e["type"] for e in srv.all_events(0) if e.get("claim") == retried[0]["id"]]
        self.assertEqual(types.count("claim.acquired"), 1, types)
        for cid in holders.values():
            srv.release(cid)


class TestStoreInUse(ServerTestCase):
    """Two servers on one SQLite file would each keep their own engine and
    overwrite each other's rows (seen: the twin started, and the first went
    503 for good at their first colliding commit). The second refuses to
    start, naming the process that holds the file; the first serves on; the
    file is free again once its server is gone, even after kill -9."""

    def start_twin(self):
        cmd = [self.srv.binary, "--listen", "127.0.0.1:%d" % free_port(),
               "--store", self.srv.store_url]
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)

    def test_second_server_on_postgres_follows(self):
        """On PostgreSQL a second server does not refuse the database: it
        follows the one that leads (shared mode), relaying every request to
        it, and leads once that one is gone."""
        srv = self.srv
        if srv.store_kind != "postgres":
            self.skipTest("SQLite: one server per file")
        first = srv.claim("first", [("m", "follow/me")])
        port = free_port()
        cmd = [self.srv.binary, "--listen", "127.0.0.1:%d" % port, "--store", self.srv.store_url]
        twin = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            h = wait_until(lambda: health(port), 10, what="the twin answering /healthz")
            self.assertIn(h["role"], ("follower", "campaigning"))
            h = wait_until(lambda: (health(port) or {}).get("role") == "follower" and health(port),
                           10, what="the twin following")
            self.assertEqual(h["leader"], health(srv.port)["leader"])
            # Through the twin, the same claims.
            import http.client
            import json
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/v1/claims/" + first["id"])
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            self.assertEqual(json.loads(r.read())["state"], "held")
            self.assertEqual(r.getheader("Sluice-Epoch"), str(h["epoch"]))
            conn.close()
        finally:
            twin.terminate()
            self.assertEqual(twin.wait(timeout=30), 0)
        self.assertStillServing()

    def test_second_server_refuses_the_file(self):
        srv = self.srv
        if srv.store_kind == "postgres":
            self.skipTest("PostgreSQL: a second server follows (the test above)")
        first = srv.claim("first", [("m", "split/brain")])
        twin = self.start_twin()
        self.assertNotEqual(twin.returncode, 0)
        err = twin.stderr.decode("utf-8", "replace")
        self.assertIn("is in use by process %d" % srv.proc.pid, err)
        self.assertIn("Stop the other server", err)
        self.assertNotIn("listening", err)
        # The first server is untouched and goes on committing.
        self.assertEqual(srv.get("/healthz").status, 200)
        second = srv.claim("second", [("m", "split/brain")])
        self.assertEqual(second["state"], "pending")
        srv.release(first["id"])
        self.assertEqual(srv.claim_get(second["id"])["state"], "held")
        # kill -9 leaves no stale lock: a new server takes the file.
        srv.restart(hard=True)
        self.assertEqual(srv.claim_get(second["id"])["state"], "held")


if __name__ == "__main__":
    unittest.main()
