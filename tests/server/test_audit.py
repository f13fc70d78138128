#!/usr/bin/env python3
"""test_audit.py - F11: who did what.

Every event names its actor: the token whose request asked for it, the
server ("sluice") for what its rules do on their own (a lease running out,
a waiter let in after another's release), "anonymous" on a server without
tokens; actors survive a restart. The audit log (audit.path) gets a JSON
line for every state-changing request and every refused one, is reopened
on SIGHUP (log rotation), and when it cannot be written either lets
requests go on (on_failure: continue) or refuses changes with 503
audit_unavailable (on_failure: refuse). docs/api.md (The event),
docs/security.md (Audit log).
"""
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluiced_fixture as fx  # noqa: E402
from sluiced_fixture import ServerTestCase, Sluiced, wait_until  # noqa: E402

ADMIN, TEAM_A, TEAM_B = ("audit-admin-secret", "audit-a-secret-0123456789",
                        "audit-b-secret-0123456789")

TOKENS = """
tokens:
  - {name: admin, token: "%s", admin: true}
  - {name: team-a, token: "%s", prefixes: ["team-a/"]}
  - {name: team-b, token: "%s", prefixes: ["team-b/"]}
""" % (ADMIN, TEAM_A, TEAM_B)


def actors(events, claim):
    return [(e["type"], e["actor"]) for e in events if e["claim"] == claim]


class EventActors(ServerTestCase):
    CONFIG = TOKENS
    TOKEN = ADMIN

    def claim_as(self, token, body, expect=201):
        r = self.srv.post("/v1/claims", body, token=token)
        self.assertEqual(r.status, expect, r)
        return r.json

    def test_events_name_the_token_and_the_server(self):
        since = self.srv.events()["next"]
        a = self.claim_as(TEAM_A, {"holder": "team-a/run", "locks": [{"mutex": "team-a/m"}],
                                   "lease": "1s"})
        b1 = self.claim_as(TEAM_B, {"holder": "team-b/run", "locks": [{"mutex": "team-b/m"}]})
        b2 = self.claim_as(TEAM_B, {"holder": "team-b/run", "locks": [{"mutex": "team-b/m"}]})
        self.assertEqual(self.srv.delete("/v1/claims/" + b1["id"], token=TEAM_B).status, 200)
        self.assertEqual(self.srv.post("/v1/claims/%s/cancel" % b2["id"]).status, 200)
        # team-a's lease runs out with nobody asking: the server's.
        wait_until(lambda: self.srv.claim_get(a["id"])["state"] == "expired", 10,
                   what="team-a's claim expiring")
        self.srv.sem_put("team-b/sem", 2)
        want_a = [("claim.queued", "team-a"), ("claim.acquired", "team-a"),
                  ("claim.expired", "sluice")]
        want_b1 = [("claim.queued", "team-b"), ("claim.acquired", "team-b"),
                   ("claim.released", "team-b")]
        # b2 was let in by b1's release: the server's rule, not team-b's request.
        want_b2 = [("claim.queued", "team-b"), ("claim.waiting", "team-b"),
                   ("claim.acquired", "sluice"), ("claim.canceled", "admin")]
        for _ in range(2):
            evs = self.srv.all_events(since)
            self.assertEqual(actors(evs, a["id"]), want_a)
            self.assertEqual(actors(evs, b1["id"]), want_b1)
            self.assertEqual(actors(evs, b2["id"]), want_b2)
            sem = [e["actor"] for e in evs if e["type"] == "semaphore.updated"]
            self.assertEqual(sem, ["admin"])
            # The same log, read back by the next server from the store.
            self.srv.restart()

    @unittest.skipIf(fx.cluster_mode(), "one server of its own")
    def test_a_server_without_tokens_names_requests_anonymous(self):
        srv = Sluiced()
        try:
            c = srv.claim("anon", [("m", "anon/m")])
            srv.release(c["id"])
            evs = srv.all_events(0)
            self.assertEqual(actors(evs, c["id"]),
                             [("claim.queued", "anonymous"), ("claim.acquired", "anonymous"),
                              ("claim.released", "anonymous")])
        finally:
            srv.stop()


def audit_config(path, on_failure=None):
    extra = "\n  on_failure: %s" % on_failure if on_failure else ""
    return TOKENS + "audit:\n  path: %s%s\n" % (path, extra)


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f.read().splitlines()]


@unittest.skipIf(fx.cluster_mode(), "the leader writes the log, and the test talks to a follower")
class AuditTestCase(ServerTestCase):
    """A server with tokens whose audit log is in a directory of the test's."""
    ON_FAILURE = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sluice-audit-")
        cls.log = os.path.join(cls.tmp, "audit.log")
        cls.srv = Sluiced(config=audit_config(cls.log, cls.ON_FAILURE), token=ADMIN)
        cls._failed = False

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def failures(self):
        text = self.srv.get("/metrics").body.decode()
        return int(re.search(r"^sluice_audit_write_failures_total (\d+)$", text, re.M).group(1))

    def break_log(self):
        """The log's path becomes a directory, and SIGHUP reopens it: the
        server cannot write its log any more (chmod would not stop root)."""
        before = self.failures()
        os.rename(self.log, self.log + ".old")
        os.mkdir(self.log)
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: self.failures() > before, 10, what="the reopen failing")

    def mend_log(self):
        os.rmdir(self.log)


class AuditLog(AuditTestCase):
    def test_lines_for_a_change_a_401_a_403_and_a_404(self):
        start = len(read_lines(self.log))
        c = self.srv.post("/v1/claims", {"holder": "team-a/r", "locks": [{"mutex": "team-a/x"}]},
                          token=TEAM_A)
        self.assertEqual(c.status, 201, c)
        cid = c.json["id"]
        self.assertEqual(self.srv.get("/v1/claims/" + cid, token=TEAM_A).status, 200)
        self.assertEqual(self.srv.delete("/v1/claims/" + cid, token=TEAM_A).status, 200)
        r = self.srv.delete("/v1/claims?holder_prefix=team-a/nobody", token=TEAM_A)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.srv.post("/v1/claims", {"holder": "x"}, token="").status, 401)
        self.assertEqual(self.srv.get("/v1/claims", token="wrong-secret").status, 401)
        r = self.srv.post("/v1/claims", {"holder": "team-a/r", "locks": [{"mutex": "team-b/x"}]},
                          token=TEAM_A)
        self.assertEqual(r.status, 403, r)
        self.assertEqual(self.srv.get("/v1/claims/" + cid, token=TEAM_B).status, 404)
        lines = read_lines(self.log)[start:]
        got = [(l["actor"], l["method"], l["path"], l["status"], l["outcome"], l.get("claim"))
               for l in lines]
        self.assertEqual(got, [
            ("team-a", "POST", "/v1/claims", 201, "ok", cid),
            ("team-a", "DELETE", "/v1/claims/" + cid, 200, "ok", cid),
            ("team-a", "DELETE", "/v1/claims", 200, "ok", None),
            (None, "POST", "/v1/claims", 401, "unauthorized", None),
            (None, "GET", "/v1/claims", 401, "unauthorized", None),
            ("team-a", "POST", "/v1/claims", 403, "forbidden", None),
            ("team-b", "GET", "/v1/claims/" + cid, 404, "not_found", None),
        ])
        for l in lines:
            self.assertEqual(l["address"], "127.0.0.1")
            self.assertRegex(l["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        with open(self.log) as f:
            text = f.read()
        for secret in (ADMIN, TEAM_A, TEAM_B, "wrong-secret", "Bearer", "nobody"):
            self.assertNotIn(secret, text)

    def test_sighup_reopens_a_renamed_log(self):
        os.rename(self.log, self.log + ".1")
        self.srv.sem_put("team-a/rot", 1)  # still the renamed file's: it is open
        self.assertEqual(read_lines(self.log + ".1")[-1]["path"], "/v1/semaphores/team-a/rot")
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: os.path.exists(self.log), 10, what="the log reopened")
        self.srv.sem_put("team-a/rot", 2)
        self.assertEqual([(l["method"], l["path"], l["actor"]) for l in read_lines(self.log)],
                         [("PUT", "/v1/semaphores/team-a/rot", "admin")])


class AuditRefuse(AuditTestCase):
    ON_FAILURE = "refuse"

    def test_changes_are_refused_while_the_log_cannot_be_written(self):
        self.break_log()
        body = {"holder": "team-a/r", "locks": [{"mutex": "team-a/refused"}]}
        r = self.srv.post("/v1/claims", body, token=TEAM_A)
        self.assertError(r, 503, "audit_unavailable", "audit log")
        self.assertEqual(self.srv.get("/v1/claims?run=team-a", token=TEAM_A).status, 200)
        self.assertIn("audit log %s cannot be written" % self.log, self.srv.stderr())
        self.mend_log()
        r = self.srv.post("/v1/claims", body, token=TEAM_A)
        self.assertEqual(r.status, 201, r)
        # The refusal's line waited, and went in first.
        self.assertEqual([(l["status"], l["outcome"]) for l in read_lines(self.log)],
                         [(503, "audit_unavailable"), (201, "ok")])


class AuditContinue(AuditTestCase):
    ON_FAILURE = "continue"

    def test_changes_go_on_while_the_log_cannot_be_written(self):
        self.break_log()
        for i in range(2):
            r = self.srv.post("/v1/claims", {"holder": "team-a/r",
                                             "locks": [{"mutex": "team-a/c%d" % i}]},
                              token=TEAM_A)
            self.assertEqual(r.status, 201, r)
        self.assertEqual(self.srv.stderr().count("cannot be written"), 1, self.srv.stderr())
        self.mend_log()
        self.srv.sem_put("team-a/after", 1)
        self.assertEqual([(l["method"], l["status"]) for l in read_lines(self.log)],
                         [("POST", 201), ("POST", 201), ("PUT", 200)])


if __name__ == "__main__":
    fx.main()
