#!/usr/bin/env python3
"""The scheduling rules against a real server, as docs/engine.md's examples
tell them: an urgent deploy preempting a batch job, a capped queue, 3:1
weighted tenants, a per-run limit of 4 across 20 steps, the TEP-0120 two
groups, 30 calls a minute through a rate-limited semaphore, a run's claims
released in one call, bulk operations (a run's cleanup, a queue clear) that
grant and preempt nothing on the way out, and `created` that cannot jump the
queue.

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

ADMIN = "sched-admin-secret-0123456789"


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
        self.assertEqual(reasons[0]["preempt"],
                         {"status": "waiting", "holders": 1, "preempted": 1})
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

    # ---- where rules meet (issue 21) -------------------------------------

    def test_each_rate_waiter_is_told_its_own_time(self):
        """S6: 8 claims at 30/1m with burst 5: waiters 6, 7 and 8 are let in
        2 s apart, and why, the reason and admit_at say so for each."""
        api = self.name("vendor-api")
        self.srv.sem_put(api, 10, rate="30/1m", burst=5)
        ids = [self.srv.claim("vendor/%d" % i, [("s", api)])["id"] for i in range(8)]
        waiters = ids[5:]
        self.assertEqual([self.state(c) for c in waiters], ["pending"] * 3)
        admits = []
        for cid in waiters:
            r = self.why(cid)[0]
            self.assertEqual(r["rule"], "rate")
            self.assertIn(r["admit_at"], r["message"])
            self.assertIn(r["admit_at"], self.srv.claim_get(cid)["reason"])
            admits.append(parse_time(r["admit_at"]))
        self.assertEqual([b - a for a, b in zip(admits, admits[1:])], [2000, 2000])
        self.srv.delete("/v1/claims?holder_prefix=vendor/")

    def test_preemption_waits_for_the_rate(self):
        """S4: a revocation must buy a grant: with the rate's token an hour
        away, the holder keeps its slot and the urgent claim says rate."""
        dep = self.name("deployer")
        self.srv.sem_put(dep, 1, preempt=True, preempt_grace="0", rate="1/1h", burst=1)
        low = self.srv.claim("batch/low", [("s", dep)])
        self.assertEqual(low["state"], "held")
        urgent = self.srv.claim("deploy/urgent", [("s", dep)], priority=10)
        self.assertEqual(self.state(low["id"]), "held")
        r = self.why(urgent["id"])[0]
        self.assertEqual((r["rule"], r["preempt"]), ("rate", {"status": "will", "holders": 1}))
        self.assertGreater(parse_time(r["admit_at"]) - parse_time(low["granted"]), 3500000)
        self.assertIn("preempts holders of lower priority only when the rate", r["message"])
        for c in (urgent, low):
            self.srv.release(c["id"])

    def test_a_victim_frees_all_of_its_locks(self):
        """S5: the run queue with a tenant tag limit: the urgent run's tenant
        slot is held by the very run it preempts, and that frees both."""
        runs = self.name("runs")
        self.srv.sem_put(runs, 1, preempt=True, preempt_grace="0")
        self.srv.sem_put("tag/tenant5=*", 1)
        nightly = self.srv.claim("acme/nightly", [("s", runs)], tags={"tenant5": "acme"})
        self.assertEqual(nightly["state"], "held")
        hotfix = self.srv.claim("acme/hotfix", [("s", runs)], tags={"tenant5": "acme"},
                                priority=10)
        self.assertEqual(self.srv.claim_get(hotfix["id"], "?wait=10s&seen=pending")["state"],
                         "held")
        ended = self.srv.claim_get(nightly["id"])
        self.assertEqual(ended["state"], "canceled")
        self.assertIn("preempted", ended["reason"])
        self.srv.release(hotfix["id"])

    def test_preemption_words_match_the_state(self):
        """S9: no "would preempt" on a claim with no holder below it. S10: a
        holder revoked by its group's newer claim is not called preempted."""
        rc = self.name("rc")
        self.srv.sem_put(rc, 2, preempt=True, preempt_grace="1m")
        a = self.srv.claim("night/a", [("s", rc)])
        b = self.srv.claim("night/b", [("s", rc)])
        c = self.srv.claim("night/c", [("s", rc)])
        urg = self.srv.claim("urg/1", [("s", rc)], priority=5)
        self.assertEqual(self.state(b["id"]), "revoking")
        self.assertIsNone(self.why(c["id"])[0]["preempt"])
        for x in (urg, c, b, a):
            self.srv.release(x["id"])
        gpuc = self.name("gpuc")
        group = self.name("g-c1").replace("/", "-")
        self.srv.sem_put(gpuc, 2, preempt=True, preempt_grace="1m")
        cc = self.srv.claim("g/C", [("s", gpuc)], group=group)
        d = self.srv.claim("g/D", [("s", gpuc)])
        bb = self.srv.claim("g/B", [("s", gpuc)], priority=10, group=group,
                            cancel="in-progress", grace="1m")
        self.assertEqual(self.state(cc["id"]), "revoking")
        r = self.why(bb["id"])[0]
        self.assertEqual(r["preempt"], {"status": "waiting", "holders": 1, "preempted": 0})
        self.assertIn("revoked by a newer claim of their group", r["message"])
        self.assertNotIn("preempted", r["message"])
        for x in (bb, d, cc):
            self.srv.release(x["id"])

    def test_no_limit_never_joins_a_live_inline_semaphore(self):
        """S8: a claim without a limit on a name nobody configured is 422,
        whether or not an inline semaphore of that name is live, and the
        message gives the live limit to mend it."""
        steps = self.name("run-43/steps")
        a = self.srv.claim("run-43/a", [{"semaphore": steps, "limit": 2}])
        self.assertEqual(a["locks"][0]["limit"], 2)
        r = self.srv.post("/v1/claims", {"holder": "run-43/b", "locks": [{"semaphore": steps}]})
        self.assertError(r, 422, "unknown_semaphore", contains='give "limit": 2 as the other')
        self.srv.release(a["id"])
        r = self.srv.post("/v1/claims", {"holder": "run-43/b", "locks": [{"semaphore": steps}]})
        self.assertError(r, 422, "unknown_semaphore")
        # A configured semaphore's claims show no limit they did not give.
        conf = self.name("conf")
        self.srv.sem_put(conf, 3)
        c = self.srv.claim("conf/a", [("s", conf)])
        self.assertNotIn("limit", c["locks"][0])
        self.srv.release(c["id"])

    def test_bad_rules_are_refused_with_the_fix(self):
        s = self.name("s")
        for body, words in (({"rate": "30"}, "N/PERIOD"),
                            ({"rate": "0/1m"}, "allows no grant at all: a rate allows 1 to"),
                            ({"rate": "5/1d"}, "write hours instead (24h for 1d)"),
                            ({"rate": "5/200y"}, "has a period after the '/' that has a unit "
                                                 "durations do not have"),
                            ({"rate": "5/1000000h"}, "longer than 100 years"),
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
        self.assertEqual(r.json, {"released": 1, "withdrawn": 1, "canceled": 0, "skipped": 0})
        self.assertEqual((self.state(a["id"]), self.state(b["id"])), ("released", "withdrawn"))
        self.assertEqual(self.state(other["id"]), "held")
        self.srv.release(other["id"])

    # ---- bulk operations are one step (S2, S3) ----------------------------
    # docs/engine.md, "Bulk operations": the whole set leaves before anyone
    # is let in. Ended one at a time, each of these granted a claim being
    # ended or revoked a holder outside the set.

    def ids_acquired_since(self, since, claims):
        ids = {c["id"] for c in claims}
        return [e["claim"] for e in self.srv.all_events(since)
                if e["type"] == "claim.acquired" and e["claim"] in ids]

    def test_run_cleanup_grants_none_of_its_claims(self):
        builders, run = self.name("builders"), self.name("run-77") + "/"
        self.srv.sem_put(builders, 2)
        other = self.srv.claim(self.name("other/build"), [("s", builders)])
        big = self.srv.claim(run + "big", [("s", builders, 2)])
        small = self.srv.claim(run + "small", [("s", builders)])
        self.assertEqual((big["state"], small["state"]), ("pending", "pending"))
        since = self.srv.events()["next"]
        r = self.srv.delete("/v1/claims?holder_prefix=" + q(run))
        self.assertEqual(r.json, {"released": 0, "withdrawn": 2, "canceled": 0, "skipped": 0})
        self.assertEqual((self.state(big["id"]), self.state(small["id"])),
                         ("withdrawn", "withdrawn"))
        self.assertEqual(self.ids_acquired_since(since, (big, small)), [])
        self.assertEqual([l.get("token") for l in self.srv.claim_get(small["id"])["locks"]],
                         [None])
        self.srv.release(other["id"])

    def test_run_cleanup_preempts_nobody(self):
        gpu, db = self.name("gpu"), self.name("db")
        run = self.name("nightly-42") + "/"
        self.srv.sem_put(gpu, 1, preempt=True, preempt_grace="0")
        train = self.srv.claim(self.name("nightly-41/train"), [("s", gpu)])
        mig = self.srv.claim(self.name("other/db-migration"), [("m", db)])
        self.srv.claim(run + "a", [("s", gpu), ("m", db)], priority=10)
        self.srv.claim(run + "b", [("s", gpu)], priority=5)
        self.assertEqual(self.state(train["id"]), "held")
        r = self.srv.delete("/v1/claims?holder_prefix=" + q(run))
        self.assertEqual(r.json, {"released": 0, "withdrawn": 2, "canceled": 0, "skipped": 0})
        self.assertEqual(self.state(train["id"]), "held")
        self.assertEqual(self.srv.get("/v1/queue?lock=sem/" + q(gpu)).json["queue"], [])
        for c in (train, mig):
            self.srv.release(c["id"])

    def test_cleanup_cancels_a_revoking_claim_and_counts_it(self):
        r_, run = self.name("r"), self.name("run") + "/"
        self.srv.sem_put(r_, 1, preempt=True, preempt_grace="1h")
        low = self.srv.claim(run + "low", [("s", r_)])
        urgent = self.srv.claim(self.name("urgent"), [("s", r_)], priority=5)
        self.assertEqual(self.state(low["id"]), "revoking")
        r = self.srv.delete("/v1/claims?holder_prefix=" + q(run))
        self.assertEqual(r.json, {"released": 0, "withdrawn": 0, "canceled": 1, "skipped": 0})
        ended = self.srv.claim_get(low["id"])
        self.assertEqual(ended["state"], "canceled")
        self.assertIn("preempted", ended["reason"])
        self.assertEqual(self.state(urgent["id"]), "held")
        self.srv.release(urgent["id"])

    def s3_setup(self):
        """docs' S3: workers rebalanced, limit 2, one slot free; the run's
        late (key a, blocked on a held mutex) is first in the order of choice,
        its early (key b) waits behind it."""
        workers, store = self.name("workers"), self.name("artifact-store")
        run = self.name("nightly-9") + "/"
        self.srv.sem_put(workers, 2, strategy="rebalanced")
        lock = self.srv.claim(self.name("other/lock"), [("m", store)])
        w1 = self.srv.claim(self.name("other/w1"), [("s", workers)], rebalance_key="b")
        w2 = self.srv.claim(self.name("other/w2"), [("s", workers)], rebalance_key="b")
        early = self.srv.claim(run + "early", [("s", workers)], rebalance_key="b")
        late = self.srv.claim(run + "late", [("s", workers), ("m", store)], rebalance_key="a")
        self.srv.release(w2["id"])
        self.assertEqual((self.state(early["id"]), self.state(late["id"])),
                         ("pending", "pending"))
        return workers, run, (early, late), (lock, w1)

    def test_queue_clear_of_a_rebalanced_queue_grants_none(self):
        for query in ("holder_prefix=%s", "lock=sem/%s"):
            workers, run, mine, others = self.s3_setup()
            since = self.srv.events()["next"]
            arg = run if query.startswith("holder") else workers
            r = self.srv.delete("/v1/queue?" + query % q(arg))
            self.assertEqual(r.json, {"canceled": 2}, query)
            self.assertEqual([self.state(c["id"]) for c in mine], ["canceled", "canceled"])
            self.assertEqual(self.ids_acquired_since(since, mine), [])
            for c in others:
                self.srv.release(c["id"])

    def test_queue_clear_preempts_nobody_on_another_lock(self):
        gpu, pool, mx = self.name("gpu"), self.name("pool"), self.name("mx")
        run = self.name("run5") + "/"
        self.srv.sem_put(gpu, 1, preempt=True, preempt_grace="0")
        self.srv.sem_put(pool, 2, strategy="rebalanced")
        training = self.srv.claim(self.name("team-x/training"), [("s", gpu)])
        p1 = self.srv.claim(self.name("other/p1"), [("s", pool)], rebalance_key="b")
        held = self.srv.claim(self.name("other/mx"), [("m", mx)])
        self.srv.claim(run + "l", [("s", pool), ("m", mx)], rebalance_key="a")
        h = self.srv.claim(run + "h", [("s", gpu), ("s", pool)], rebalance_key="b",
                           priority=10)
        self.assertEqual((self.state(training["id"]), h["state"]), ("held", "pending"))
        r = self.srv.delete("/v1/queue?holder_prefix=" + q(run))
        self.assertEqual(r.json, {"canceled": 2})
        self.assertEqual(self.state(training["id"]), "held")
        self.assertEqual(self.state(h["id"]), "canceled")
        for c in (training, p1, held):
            self.srv.release(c["id"])

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
    token: ci-secret-0123456789
    prefixes: ["ci/"]
  - name: ci-jobs
    token: jobs-secret-0123456789
    claim: ["ci/"]
""" % ADMIN
    TOKEN = ADMIN

    def test_only_an_admin_token_sets_created_far_back(self):
        body = {"holder": "ci/x", "locks": [{"mutex": "ci/m"}],
                "created": "2020-01-01T00:00:00.000Z"}
        r = self.srv.post("/v1/claims", body, token="ci-secret-0123456789")
        self.assertError(r, 403, "forbidden", contains="admin token")
        r = self.srv.post("/v1/claims", body)
        self.assertEqual(r.status, 201, r)
        self.srv.release(r.json["id"])

    def test_clearing_a_queue_needs_the_operate_permission(self):
        """F7: an admin's, or a token's with operate on the lock (prefixes
        give it); claim alone does not clear other clients' claims."""
        for query in ("lock=mtx/ci/m", "holder_prefix=ci/"):
            r = self.srv.delete("/v1/queue?" + query, token="jobs-secret-0123456789")
            self.assertError(r, 403, "forbidden", contains="operate permission")
        self.assertEqual(self.srv.delete("/v1/queue?lock=mtx/ci/m", token="ci-secret-0123456789").status,
                         200)
        r = self.srv.delete("/v1/queue?lock=mtx/other/m", token="ci-secret-0123456789")
        self.assertError(r, 403, "forbidden", contains="outside its prefixes")
        r = self.srv.delete("/v1/queue?holder_prefix=ci/")
        self.assertEqual(r.status, 200, r)
        self.assertError(self.srv.delete("/v1/queue"), 400, "bad_request")


if __name__ == "__main__":
    unittest.main(verbosity=2)
