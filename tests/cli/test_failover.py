"""test_failover.py - `sluice` given several servers (SLUICE_SERVER=URL,URL,...)
against a real shared-mode cluster: two sluiced on one throwaway PostgreSQL
database (tests/server/pg_fixture.py), the first to start leading.

Covers: the list's validation (an entry named by its position), every kind
of command through a list whose first server is dead, `sluice status`'s
row per server (role, epoch, leader, or the error), and `sluice run`
keeping its claim while the leader is killed with SIGKILL: the command
finishes with its own status, the claim ends released, its lease was
renewed through the new leader, and a second claimant on the same mutex
was granted only after the first released (its token is larger).

No test sleeps to wait for state: each waits, with a deadline, for what
the servers or the commands report.
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

from cli_fixture import (base_env, finish, free_port, main, parse_fields, parse_table,
                         sluice, start, tmpdir, wait_until)

# tests/server is on the path through cli_fixture.
import sluiced_fixture  # noqa: E402
from sluiced_fixture import SANITIZER_MARKS, health  # noqa: E402

ROLE_DEADLINE_S = 20.0  # an election on a loaded machine under ASan


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


class Node:
    """One sluiced of the cluster, on a port of its own."""

    def __init__(self, store_url, d, name):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = os.path.join(d, "%s.log" % name)
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [sluiced_fixture.binary(), "--listen", "127.0.0.1:%d" % self.port,
                 "--store", store_url, "--log-level", "warn"],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err)

    def role(self):
        h = health(self.port) if self.proc.poll() is None else None
        return h.get("role") if h else None

    def wait_role(self, role):
        wait_until(lambda: self.role() == role, ROLE_DEADLINE_S,
                   what="%s as %s (log: %s)" % (self.url, role, read(self.log)[-2000:]))

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for mark in SANITIZER_MARKS:
            if mark in read(self.log):
                raise AssertionError("%s reported %r:\n%s" % (self.url, mark, read(self.log)))

    def request(self, method, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path)
            r = conn.getresponse()
            body = r.read()
            return r.status, json.loads(body) if body else None
        finally:
            conn.close()

    def get(self, path):
        status, body = self.request("GET", path)
        if status != 200:
            raise AssertionError("GET %s on %s: %d %r" % (path, self.url, status, body))
        return body


class Cluster:
    """A PostgreSQL database and two sluiced on it: `lead` then `follow`."""

    def __init__(self):
        from pg_fixture import Postgres
        self.dir = tempfile.mkdtemp(prefix="sluice-failover-")
        self.pg = Postgres().start()
        self.pg.psql("CREATE DATABASE failover")
        self.store = self.pg.url("failover")
        self.nodes = []
        self.lead = self.add("lead")
        self.lead.wait_role("leader")
        self.follow = self.add("follow")
        self.follow.wait_role("follower")

    def add(self, name):
        n = Node(self.store, self.dir, name)
        self.nodes.append(n)
        return n

    def close(self):
        try:
            for n in self.nodes:
                n.stop()
        finally:
            self.pg.close()
            shutil.rmtree(self.dir, ignore_errors=True)


def dead_url():
    return "http://127.0.0.1:%d" % free_port()


class ListValidationTest(unittest.TestCase):
    """A bad list is a usage error naming the entry; nothing is sent."""

    def test_bad_entries_are_named_by_position(self):
        env = base_env(None, SLUICE_SERVER="http://127.0.0.1:1,htp://b")
        r = sluice(None, "status", env=env)
        self.assertEqual(r.rc, 2, r)
        self.assertIn('SLUICE_SERVER entry 2 ("htp://b") is not an http:// URL', r.err)
        r = sluice(None, "--server", "http://127.0.0.1:1,,http://127.0.0.1:2", "sem", "list")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--server entry 2 is empty", r.err)
        many = ",".join("http://127.0.0.1:%d" % (i + 1) for i in range(17))
        r = sluice(None, "queue", "list", env=base_env(None, SLUICE_SERVER=many))
        self.assertEqual(r.rc, 2, r)
        self.assertIn("SLUICE_SERVER names 17 servers; at most 16", r.err)

    def test_no_server_of_the_list_answers(self):
        urls = "%s,%s" % (dead_url(), dead_url())
        r = sluice(None, "status", env=base_env(None, SLUICE_SERVER=urls))
        self.assertEqual(r.rc, 3, r)
        self.assertIn("Is sluiced running at any of %s?" % urls, r.err)
        rows = parse_table(r.out)[1]
        self.assertEqual([row["SERVER"] for row in rows], urls.split(","))
        for row in rows:
            self.assertIn("cannot reach the sluice server", row["ERROR"])


class ClusterTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()

    def env(self, *urls, **kw):
        return base_env(None, SLUICE_SERVER=",".join(urls), **kw)

    def test_commands_through_a_dead_server_first(self):
        c = self.cluster
        env = self.env(dead_url(), c.lead.url, c.follow.url)
        self.assertEqual(sluice(None, "sem", "set", "fo-db", "2", env=env).rc, 0)
        rows = parse_table(sluice(None, "sem", "list", env=env).out)[1]
        self.assertIn("fo-db", [row["NAME"] for row in rows])
        r = sluice(None, "acquire", "--semaphore", "fo-db", "--lease", "0", env=env)
        self.assertEqual(r.rc, 0, r)
        cid = r.out.strip()
        self.assertEqual(c.follow.get("/v1/claims/" + cid)["state"], "held")
        info = parse_fields(sluice(None, "claims", "info", cid, env=env).out)
        self.assertEqual(info["State"], "held")
        r = sluice(None, "release", cid, env=env)
        self.assertEqual((r.rc, r.out.split()), (0, [cid, "released"]), r)
        r = sluice(None, "events", "--claim", cid, "--json", env=env)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual([e["type"] for e in r.json()["events"]][-1], "claim.released")
        self.assertEqual(sluice(None, "sem", "rm", "fo-db", env=env).rc, 0)
        self.assertEqual(c.lead.request("GET", "/v1/semaphores/fo-db")[0], 404)

    def test_status_shows_every_server(self):
        c = self.cluster
        dead = dead_url()
        r = sluice(None, "status", env=self.env(dead, c.follow.url, c.lead.url))
        self.assertEqual(r.rc, 0, r)
        head, _, table = r.out.partition("\n\n")
        f = parse_fields(head)
        epoch = c.lead.get("/healthz")["epoch"]
        self.assertEqual((f["Server"], f["Role"], f["Epoch"], f["Leader"]),
                         (c.lead.url, "leader", str(epoch), c.lead.url))
        self.assertTrue(f["Held"].isdigit(), f)
        rows = {row["SERVER"]: row for row in parse_table(table)[1]}
        self.assertEqual(list(rows), [dead, c.follow.url, c.lead.url])
        self.assertEqual((rows[dead]["ROLE"], rows[dead]["EPOCH"]), ("-", "-"))
        self.assertIn("cannot reach the sluice server at %s" % dead, rows[dead]["ERROR"])
        self.assertEqual((rows[c.follow.url]["ROLE"], rows[c.follow.url]["EPOCH"],
                          rows[c.follow.url]["LEADER"], rows[c.follow.url]["ERROR"]),
                         ("follower", str(epoch), c.lead.url, "-"))
        self.assertEqual(rows[c.lead.url]["ROLE"], "leader")
        # --json: each server's /healthz, or its error
        js = sluice(None, "status", "--json", env=self.env(dead, c.lead.url)).json()
        self.assertEqual([s["server"] for s in js["servers"]], [dead, c.lead.url])
        self.assertIn("cannot reach", js["servers"][0]["error"]["message"])
        self.assertEqual(js["servers"][1]["health"]["role"], "leader")
        # one server in shared mode: its role, epoch and leader; a follower
        # has no counts (the leader has them)
        f = parse_fields(sluice(None, "status", env=self.env(c.follow.url)).out)
        self.assertEqual((f["Role"], f["Epoch"], f["Leader"], f["Held"]),
                         ("follower", str(epoch), c.lead.url, "-"))


class FailoverTest(unittest.TestCase):
    """The leader killed while `sluice run` holds a mutex (a cluster of its
    own, since its leader dies)."""

    def setUp(self):
        self.cluster = Cluster()
        self.addCleanup(self.cluster.close)

    def test_run_keeps_its_claim_when_the_leader_is_killed(self):
        c = self.cluster
        d = tmpdir(self)
        log = os.path.join(d, "log")
        env = base_env(None, SLUICE_SERVER=",".join([dead_url(), c.lead.url, c.follow.url]),
                       D=d)
        first = start(None, "run", "--mutex", "fo-m", "--lease", "3s", "--holder", "first",
                      "--", "sh", "-c",
                      'echo "start1 $SLUICE_SERVER" >> "$D/log"; '
                      'while [ ! -e "$D/go" ]; do sleep 0.05; done; echo end1 >> "$D/log"',
                      env=env)
        wait_until(lambda: "start1" in read(log), 20, what="the first command to start")
        self.assertIn("start1 %s" % env["SLUICE_SERVER"], read(log))  # the whole list
        cid1 = c.follow.get("/v1/mutexes/fo-m")["holders"][0]["claim"]
        second = start(None, "run", "--mutex", "fo-m", "--holder", "second", "--", "sh", "-c",
                       'echo start2 >> "$D/log"; echo end2 >> "$D/log"', env=env)

        def pending_second():
            q = c.follow.get("/v1/queue?lock=mtx/fo-m")["queue"]
            return [x["id"] for x in q if x["holder"] == "second"]
        cid2 = wait_until(pending_second, 20, what="the second claim waiting")[0]

        c.lead.kill9()
        c.follow.wait_role("leader")
        # The keeper renews through the new leader: the lease moves on (the
        # takeover's own extension aside), and the claim is still held.
        seen = c.follow.get("/v1/claims/" + cid1)["expires"]
        wait_until(lambda: c.follow.get("/v1/claims/" + cid1)["expires"] > seen, 20,
                   what="a renewal of the first claim through the new leader")
        held = c.follow.get("/v1/mutexes/fo-m")
        self.assertEqual([h["claim"] for h in held["holders"]], [cid1])
        self.assertEqual(c.follow.get("/v1/claims/" + cid2)["state"], "pending")
        self.assertIsNone(first.poll())

        open(os.path.join(d, "go"), "w").close()
        r1, r2 = finish(first, 60), finish(second, 60)
        self.assertEqual(r1.rc, 0, r1)
        self.assertEqual(r2.rc, 0, r2)
        lines = [l.split()[0] for l in read(log).splitlines()]
        self.assertEqual(lines, ["start1", "end1", "start2", "end2"])
        claim1 = c.follow.get("/v1/claims/" + cid1)
        claim2 = c.follow.get("/v1/claims/" + cid2)
        self.assertEqual((claim1["state"], claim2["state"]), ("released", "released"))
        self.assertGreater(claim2["locks"][0]["token"], claim1["locks"][0]["token"])


if __name__ == "__main__":
    main()
