#!/usr/bin/env python3
"""The scheduling rules against a real server, as docs/engine.md's examples
tell them: an urgent deploy preempting a batch job, a capped queue, 3:1
weighted tenants, a per-run limit of 4 across 20 steps, the TEP-0120 two
groups, 30 calls a minute through a rate-limited semaphore, a run's claims
released in one call, and `created` that cannot jump the queue.

Every wait is on state the server reports (long polls, wait_until), never
on time; the rate test reads the grant times the server reports."""
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sluiced_fixture import ServerTestCase, q, wait_until  # noqa: E402
import sluiced_fixture as fx  # noqa: E402

ADMIN = "sched-admin-secret"


def parse_time(s):
    """RFC 3339 with milliseconds, UTC, into Unix milliseconds."""
    import datetime
    d = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
    return int(d.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)


class SchedulingTest(ServerTestCase):

    def name(self, suffix):
        return "%s/%s" % (self._testMethodName, suffix)

    def state(self, cid):
        return self.srv.claim_get(cid)["state"]

    def why(self, cid):
        r = self.srv.get("/v1/claims/%s/why" % cid)
        self.assertEqual(r.status, 200, r)
        return r.json["reasons"]

    # ---- preemption ------------------------------------------------------

    def test_urgent_deploy_preempts_batch_job(self):
        runners = self.name("runners")
        sem = self.srv.sem_put(runners, 2, preempt=True, preempt_grace="30s")
        self.assertEqual((sem["preempt"], sem["preempt_grace"]), (True, "30s"))
        b1 = self.srv.claim("nightly/batch-1", [("s", runners)], priority=0)
        b2 = self.srv.claim("nightly/batch-2", [("s", runners)], priority=0)
        self.assertEqual((b1["state"], b2["state"]), ("held", "held"))
        deploy = self.srv.claim("deploy/prod", [("s", runners)], priority=10)
        self.assertEqual(deploy["state"], "pending")
        # The most recently granted batch job goes, and only one: one slot is enough.
        revoked = self.srv.claim_get(b2["id"])
        self.assertEqual(revoked["state"], "revoking")
        self.assertEqual(revoked["by"], deploy["id"])
        self.assertIn("preempted", revoked["reason"])
        self.assertEqual(self.state(b1["id"]), "held")
        reasons = self.why(deploy["id"])
        self.assertEqual(reasons[0]["preempt"], {"status": "waiting", "holders": 1})
        self.assertIn("preempted", reasons[0]["message"])
        # The batch job's client hears it at once: renewing is refused.
        r = self.srv.post("/v1/claims/%s/renew" % b2["id"])
        self.assertEqual(r.status, 409, r)
        # It stops and releases: the deploy gets the slot.
        self.srv.release(b2["id"])
        ended = self.srv.claim_get(b2["id"])
        self.assertEqual(ended["state"], "canceled")
        self.assertIn("preempted", ended["reason"])
        self.assertEqual(self.srv.claim_get(deploy["id"], "?wait=10s&seen=pending")["state"],
                         "held")
        # No cascade: nothing of batch-2 waits again.
        q2 = self.srv.get("/v1/queue?lock=sem/" + q(runners)).json["queue"]
        self.assertEqual(q2, [])
        for c in (b1, deploy):
            self.srv.release(c["id"])
        n = re.search(r"\nsluice_preemptions_total (\d+)\n", self.srv.get("/metrics").body.decode())
        self.assertTrue(n and int(n.group(1)) >= 1)

    def test_equal_priority_never_preempts(self):
        pool = self.name("pool")
        self.srv.sem_put(pool, 1, preempt=True, preempt_grace="0")
        a = self.srv.claim("a", [("s", pool)], priority=3)
        b = self.srv.claim("b", [("s", pool)], priority=3)
        self.assertEqual((self.state(a["id"]), b["state"]), ("held", "pending"))
        self.assertIsNone(self.why(b["id"])[0]["preempt"])  # nobody below it
        self.srv.sem_put(pool, 1, preempt=True, strategy="rebalanced", expect=400)
        for c in (a, b):
            self.srv.release(c["id"])

    # ---- bounded queues --------------------------------------------------

    def test_capped_queue_rejects_then_drops_oldest(self):
        lane = self.name("lane")
        self.srv.sem_put(lane, 1, max_pending=2)
        held = self.srv.claim("h", [("s", lane)])
        w1 = self.srv.claim("w1", [("s", lane)])
        w2 = self.srv.claim("w2", [("s", lane)])
        r = self.srv.post("/v1/claims", {"holder": "w3", "locks": [{"semaphore": lane}]})
        self.assertError(r, 409, "queue_full", contains="max_pending")
        self.assertEqual(len(self.srv.get("/v1/queue?lock=sem/" + q(lane)).json["queue"]), 2)
        self.srv.sem_put(lane, 1, max_pending=2, on_full="drop_oldest")
        w3 = self.srv.claim("w3", [("s", lane)])
        dropped = self.srv.claim_get(w1["id"])
        self.assertEqual(dropped["state"], "superseded")
        self.assertEqual(dropped["by"], w3["id"])
        self.assertIn("queue was full", dropped["reason"])
        ids = [e["id"] for e in self.srv.get("/v1/queue?lock=sem/" + q(lane)).json["queue"]]
        self.assertEqual(ids, [w2["id"], w3["id"]])
        # An operator clears the queue: every waiter canceled, the holder left.
        r = self.srv.delete("/v1/queue?lock=sem/" + q(lane))
        self.assertEqual((r.status, r.json), (200, {"canceled": 2}), r)
        self.assertEqual(self.state(w2["id"]), "canceled")
        self.assertEqual(self.state(held["id"]), "held")
        self.srv.release(held["id"])
        metrics = self.srv.get("/metrics").body.decode()
        for action in ("rejected", "dropped"):
            n = re.search(r'\nsluice_queue_full_total\{action="%s"\} (\d+)\n' % action, metrics)
            self.assertTrue(n and int(n.group(1)) >= 1, metrics[-2000:])

    # ---- weighted shares -------------------------------------------------

    def test_weighted_tenants_converge_to_three_to_one(self):
        pool = self.name("pool")
        sem = self.srv.sem_put(pool, 4, strategy="rebalanced", weights={"paying": 3},
                               default_weight=1)
        self.assertEqual((sem["weights"], sem["default_weight"]), ({"paying": 3}, 1))
        claims = {"paying": [], "free": []}
        # The free tenant comes first and takes every slot (work-conserving).
        for tenant in ("free", "paying"):
            for i in range(12):
                c = self.srv.claim("%s-%d" % (tenant, i), [("s", pool)], rebalance_key=tenant)
                claims[tenant].append(c["id"])

        def holders():
            lock = self.srv.get("/v1/semaphores/" + q(pool)).json
            keys = {}
            for h in lock["holders"]:
                tenant = h["holder"].split("-")[0]
                keys[tenant] = keys.get(tenant, 0) + 1
            return lock, keys
        lock, keys = holders()
        self.assertEqual(keys, {"free": 4})
        # Each holder finishes in turn; the shares move to 3:1 and stay.
        seen = []
        for _ in range(10):
            lock, keys = holders()
            seen.append((keys.get("paying", 0), keys.get("free", 0)))
            self.srv.release(lock["holders"][0]["claim"])
        self.assertEqual(seen[-4:], [(3, 1)] * 4, seen)
        # why shows the share of a waiting free claim.
        waiting = [c for c in claims["free"] if self.state(c) == "pending"]
        share = self.why(waiting[-1])[0]["share"]
        self.assertEqual((share["quota"], share["weight"], share["weights"]), (1, 1, 4))
        r = self.srv.delete("/v1/claims?holder_prefix=free-")
        self.assertEqual(r.status, 200, r)
        r = self.srv.delete("/v1/claims?holder_prefix=paying-")
        self.assertEqual(r.status, 200, r)

    # ---- per-run limits --------------------------------------------------

    def test_per_run_limit_of_four_across_twenty_steps(self):
        steps = self.name("run-42/steps")
        ids = [self.srv.claim("run-42/step-%02d" % i,
                              [{"semaphore": steps, "limit": 4}])["id"] for i in range(20)]
        lock = self.srv.get("/v1/semaphores/" + q(steps)).json
        self.assertEqual((lock["limit"], lock["inline"], lock["used"], lock["pending_count"]),
                         (4, True, 4, 16))
        # A different limit while it lives is refused, naming both.
        r = self.srv.post("/v1/claims", {"holder": "other",
                                         "locks": [{"semaphore": steps, "limit": 5}]})
        self.assertError(r, 409, "conflict", contains="limit 4")
        self.assertIn("limit 5", r.json["error"]["message"])
        running = 0
        for cid in ids:
            c = self.srv.claim_get(cid, "?wait=10s&seen=pending")
            self.assertEqual(c["state"], "held")
            self.assertEqual(c["locks"][0]["limit"], 4)
            running = self.srv.get("/v1/semaphores/" + q(steps)).json["used"]
            self.assertLessEqual(running, 4)
            self.srv.release(cid)
        # Nothing left behind.
        self.assertError(self.srv.get("/v1/semaphores/" + q(steps)), 404, "not_found")
        listed = [s["name"] for s in self.srv.get("/v1/semaphores").json["semaphores"]]
        self.assertNotIn(steps, listed)

    # ---- several groups --------------------------------------------------

    def test_tep_0120_two_groups(self):
        """Cancel all but the last run per pull request, and only allow 5 CI
        runs per repository."""
        repo = self.name("repo")
        self.srv.sem_put("group/%s-*" % repo, 5)
        first = self.srv.claim("ci/pr-12/run-1", groups=[
            {"name": repo + "-pr-12", "cancel": "in-progress"}, {"name": repo + "-x"}],
            grace="0")
        self.assertEqual(first["state"], "held")
        self.assertEqual(first["group"], repo + "-pr-12")
        self.assertEqual(first["groups"], [{"name": repo + "-pr-12", "cancel": "in-progress"},
                                           {"name": repo + "-x", "cancel": "none"}])
        others = [self.srv.claim("ci/pr-%d/run-1" % n, groups=[
            {"name": "%s-pr-%d" % (repo, n), "cancel": "in-progress"},
            {"name": repo + "-x"}]) for n in range(100, 105)]
        self.assertEqual([c["state"] for c in others], ["held"] * 4 + ["pending"])
        second = self.srv.claim("ci/pr-12/run-2", groups=[
            {"name": repo + "-pr-12", "cancel": "in-progress"}, {"name": repo + "-x"}],
            grace="0")
        old = self.srv.claim_get(first["id"])
        self.assertEqual((old["state"], old["by"]), ("canceled", second["id"]))
        # Its repository slot went to the run that waited first.
        self.assertEqual(self.state(others[4]["id"]), "held")
        self.assertEqual(second["state"], "pending")
        r = self.srv.delete("/v1/claims?holder_prefix=ci/")
        self.assertEqual(r.json["released"] + r.json["withdrawn"], 6, r)

    # ---- rate limits -----------------------------------------------------

    def test_thirty_calls_a_minute(self):
        api = self.name("github-api")
        sem = self.srv.sem_put(api, 100, rate="30/1m", burst=1)
        self.assertEqual((sem["rate"], sem["burst"]), ("30/1m", 1))
        ids = [self.srv.claim("caller-%d" % i, [("s", api)])["id"] for i in range(3)]
        # (After a restart the bucket of a saved semaphore starts empty, so
        # the first call may have to wait for its token: wait on the state.)
        self.assertEqual(self.srv.claim_get(ids[0], "?wait=10s&seen=pending")["state"], "held")
        reasons = self.why(ids[1])
        self.assertEqual(reasons[0]["rule"], "rate")
        admit = parse_time(reasons[0]["admit_at"])
        granted0 = parse_time(self.srv.claim_get(ids[0])["granted"])
        self.assertEqual(admit - granted0, 2000)
        # The next two come 2 s apart, in their queue order.
        times = [granted0]
        for cid in ids[1:]:
            c = self.srv.claim_get(cid, "?wait=10s&seen=pending")
            self.assertEqual(c["state"], "held")
            times.append(parse_time(c["granted"]))
        self.assertEqual([b - a for a, b in zip(times, times[1:])], [2000, 2000])
        for cid in ids:
            self.srv.release(cid)

    def test_bad_rules_are_refused_with_the_fix(self):
        s = self.name("s")
        for body, words in (({"rate": "30"}, "N/PERIOD"), ({"rate": "0/1m"}, "grants"),
                            ({"burst": 3}, "burst applies only with a rate"),
                            ({"on_full": "drop_oldest"}, "max_pending"),
                            ({"weights": {"a": 2}}, "rebalanced"),
                            ({"preempt_grace": "1s"}, "preempt"),
                            ({"max_pending": -1}, "max_pending")):
            body = dict(body, limit=1)
            r = self.srv.put("/v1/semaphores/" + q(s), body)
            self.assertError(r, 400, "bad_request", contains=words)

    # ---- run cleanup -----------------------------------------------------

    def test_a_runs_claims_released_in_one_call(self):
        m = self.name("m")
        a = self.srv.claim("run-7/a", [("m", m)])
        b = self.srv.claim("run-7/b", [("m", m)])
        other = self.srv.claim("run-70/x", [("m", self.name("n"))])
        r = self.srv.delete("/v1/claims?holder_prefix=run-7/")
        self.assertEqual(r.json, {"released": 1, "withdrawn": 1, "skipped": 0})
        self.assertEqual((self.state(a["id"]), self.state(b["id"])), ("released", "withdrawn"))
        self.assertEqual(self.state(other["id"]), "held")
        self.srv.release(other["id"])

    # ---- created cannot jump the queue -----------------------------------

    def test_created_far_back_needs_leave(self):
        m, ordered = self.name("m"), self.name("ordered")
        long_ago = "2020-01-01T00:00:00.000Z"
        r = self.srv.post("/v1/claims", {"holder": "h", "locks": [{"mutex": m}],
                                         "created": long_ago})
        self.assertError(r, 403, "forbidden", contains="created is")
        self.assertIn("at most 5s back", r.json["error"]["message"])
        # A semaphore may allow it.
        self.srv.sem_put(ordered, 1, backdate="100000h")
        c = self.srv.claim("h", [("s", ordered)], created=long_ago)
        self.assertEqual(c["created"], long_ago)
        # A few seconds back (clock skew) and any time ahead are fine.
        just = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 2))
        self.srv.release(self.srv.claim("h", [("m", m)], created=just)["id"])
        self.srv.release(self.srv.claim("h", [("m", m)],
                                        created="2099-01-01T00:00:00.000Z")["id"])
        self.srv.release(c["id"])


class AdminBackdateTest(ServerTestCase):
    CONFIG = """
tokens:
  - name: admin
    token: "%s"
    admin: true
  - name: ci
    token: ci-secret
    prefixes: ["ci/"]
""" % ADMIN
    TOKEN = ADMIN

    def test_only_an_admin_token_sets_created_far_back(self):
        body = {"holder": "ci/x", "locks": [{"mutex": "ci/m"}],
                "created": "2020-01-01T00:00:00.000Z"}
        r = self.srv.post("/v1/claims", body, token="ci-secret")
        self.assertError(r, 403, "forbidden", contains="admin token")
        r = self.srv.post("/v1/claims", body)
        self.assertEqual(r.status, 201, r)
        self.srv.release(r.json["id"])

    def test_clearing_a_queue_needs_an_admin_token(self):
        r = self.srv.delete("/v1/queue?lock=mtx/ci/m", token="ci-secret")
        self.assertError(r, 403, "forbidden")
        r = self.srv.delete("/v1/queue?holder_prefix=ci/")
        self.assertEqual(r.status, 200, r)
        self.assertError(self.srv.delete("/v1/queue"), 400, "bad_request")


if __name__ == "__main__":
    unittest.main(verbosity=2)
