"""test_limits.py - a run's own limits, several groups and clearing a queue,
from the `sluice` command against a real sluiced.

Covers: --limit N on a --semaphore nothing configures (twenty runs of a
step, at most four at once, and nothing left behind), the TEP-0120 example
with two groups (--group pr-12 --cancel in-progress --group repo-x, the
repo-x group a semaphore of 5 from the pattern group/repo-*), `sluice
queue clear` by lock and by holder prefix, and the usage errors of each.

The commands under test wait on a pipe the test writes to, and the test
waits, with deadlines, on what the commands leave (marker files, a log)
and on what the server reports; nothing sleeps for a fixed time.
"""
import os

from cli_fixture import (RUN_ENDED, RUN_USAGE, ServerTestCase, base_env, finish, kill_tree,
                         main, sluice, start, tmpdir, wait_until)

DEADLINE_S = 20

# The step: a pipe of its own to wait on, then "start PID" in the log and a
# marker file while it runs; the marker goes and "end PID" follows once the
# test writes to the pipe. O_APPEND writes this short are not interleaved.
STEP = ('mkfifo "$D/go.$$" && echo "start $$" >> "$D/log" && touch "$D/in.$$" && '
        'read x < "$D/go.$$"; rm -f "$D/in.$$" "$D/go.$$"; echo "end $$" >> "$D/log"')


def markers(d):
    """The pids of the steps running now (their marker files)."""
    return sorted(int(n[3:]) for n in os.listdir(d) if n.startswith("in."))


def max_running(log):
    """The most steps the log shows running at once, and the starts and ends."""
    running = most = starts = ends = 0
    for line in log.split("\n"):
        if line.startswith("start "):
            running, starts = running + 1, starts + 1
        elif line.startswith("end "):
            running, ends = running - 1, ends + 1
        most = max(most, running)
    return most, starts, ends


class LimitsTest(ServerTestCase):

    def env(self, **kw):
        return base_env(self.srv, **kw)

    def queue(self, key):
        return self.srv.get("/v1/queue?lock=" + key).json["queue"]

    def claims_of(self, holder):
        return self.srv.get("/v1/claims?holder=" + holder).json["claims"]

    def claim_of(self, holder):
        """The one claim of holder, once the server has it."""
        return wait_until(lambda: self.claims_of(holder), DEADLINE_S,
                          what="a claim of %s" % holder)[0]

    def acquire(self, *args):
        r = sluice(self.srv, "acquire", "--lease", "0", *args)
        self.assertEqual(r.rc, 0, r)
        return r.out.strip()

    # ---- --limit: a run's own limit on its steps ---------------------------------------

    def test_twenty_runs_under_an_inline_limit_of_four(self):
        d = tmpdir(self)
        self.assertEqual(self.srv.get("/v1/semaphores/run-42/steps").status, 404)
        procs = [start(self.srv, "run", "--semaphore", "run-42/steps:1", "--limit", "4",
                       "--", "sh", "-c", STEP, env=self.env(D=d)) for _ in range(20)]
        self.addCleanup(lambda: [kill_tree(p) for p in procs if p.poll() is None])
        remaining = 20
        while remaining:
            running = min(4, remaining)
            # Settled: `running` steps hold and the rest wait at the server,
            # where the limit keeps them: a fifth cannot start now.
            wait_until(lambda: len(markers(d)) == running and
                       len(self.queue("sem/run-42/steps")) == remaining - running and
                       # and the step that just ended has released its claim
                       self.srv.get("/v1/semaphores/run-42/steps").json["used"] == running,
                       DEADLINE_S, what="%d steps running, %d waiting"
                       % (running, remaining - running))
            sem = self.srv.get("/v1/semaphores/run-42/steps").json
            self.assertEqual((sem["limit"], sem["used"]), (4, running), sem)
            self.assertEqual(len(markers(d)), running)
            pid = markers(d)[0]
            with open(os.path.join(d, "go.%d" % pid), "w") as go:
                go.write("done\n")
            wait_until(lambda: pid not in markers(d), DEADLINE_S, what="step %d to end" % pid)
            remaining -= 1
        for p in procs:
            r = finish(p)
            self.assertEqual(r.rc, 0, r)
        with open(os.path.join(d, "log")) as f:
            self.assertEqual(max_running(f.read()), (4, 20, 20))
        # Made for the run, gone with its last claim.
        self.assertEqual(self.srv.get("/v1/semaphores/run-42/steps").status, 404)

    def test_a_different_limit_while_it_lives_is_refused(self):
        held = self.acquire("--semaphore", "lim-b/steps", "--limit", "2", "--holder", "lim-b/1")
        claim = self.srv.claim_get(held)
        self.assertEqual(claim["locks"][0]["limit"], 2)
        r = sluice(self.srv, "acquire", "--lease", "0", "--semaphore", "lim-b/steps:1",
                   "--limit", "3", "--holder", "lim-b/2")
        self.assertEqual(r.rc, 1, r)
        self.assertIn("limit 2", r.err)
        self.assertIn("limit 3", r.err)
        info = sluice(self.srv, "claims", "info", held)
        self.assertRegex(info.out, r"LIMIT")
        self.srv.release(held)
        self.assertEqual(self.srv.get("/v1/semaphores/lim-b/steps").status, 404)

    def test_limit_usage_errors(self):
        for args, says in (
                (["--limit", "4", "--semaphore", "s"], "follows the --semaphore it is for"),
                (["--mutex", "m", "--limit", "4"], "the lock before it is --mutex m"),
                (["--semaphore", "s", "--mutex", "m", "--limit", "4"], "--mutex m"),
                (["--semaphore", "s", "--limit", "4", "--limit", "4"], "two --limit flags"),
                (["--semaphore", "s", "--limit", "0"], "from 1 to 1000000000"),
                (["--semaphore", "s", "--limit", "1000000001"], "from 1 to 1000000000"),
                (["--semaphore", "s", "--limit", "four"], "--limit")):
            r = sluice(self.srv, "acquire", *args)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(says, r.err, r)
            r = sluice(self.srv, "run", *args, "--", "true")
            self.assertEqual(r.rc, RUN_USAGE, r)
            self.assertIn(says, r.err, r)
        self.assertEqual(self.srv.get("/v1/semaphores/s").status, 404)

    # ---- several groups: the TEP-0120 example ------------------------------------------

    def test_cancel_all_but_the_last_run_per_pr_and_five_per_repo(self):
        self.srv.sem_put("group/repo-*", 5)
        first = self.acquire("--group", "pr-12", "--group", "repo-x", "--holder", "pr-12/run-1")
        c1 = self.srv.claim_get(first)
        self.assertEqual(c1["groups"], [{"name": "pr-12", "cancel": "none"},
                                        {"name": "repo-x", "cancel": "none"}])
        self.assertEqual([l["kind"] for l in c1["locks"]], ["mutex", "semaphore"])
        # The newer run of the PR revokes the older, which has its grace to stop.
        p = start(self.srv, "acquire", "--lease", "0", "--group", "pr-12", "--cancel",
                  "in-progress", "--group", "repo-x", "--holder", "pr-12/run-2")
        self.addCleanup(kill_tree, p)
        second = self.claim_of("pr-12/run-2")["id"]
        c1 = wait_until(lambda: (lambda c: c if c["state"] == "revoking" else None)(
            self.srv.claim_get(first)), DEADLINE_S, what="the first run revoking")
        self.assertIn(second, c1["reason"])
        self.assertEqual(sluice(self.srv, "release", first).rc, 0)
        r = finish(p)
        self.assertEqual((r.rc, r.out.strip()), (0, second), r)
        c1 = self.srv.claim_get(first)
        self.assertEqual(c1["state"], "canceled")
        self.assertIn(second, c1["reason"])
        c2 = self.srv.claim_get(second)
        self.assertEqual(c2["groups"][0], {"name": "pr-12", "cancel": "in-progress"})
        self.assertEqual(c2["group"], "pr-12")
        self.srv.release(second)
        # Five runs of other PRs in repo-x hold; a sixth waits for the repo.
        held = [self.acquire("--group", "pr-%d" % n, "--cancel", "in-progress",
                             "--group", "repo-x", "--holder", "pr-%d/run-1" % n)
                for n in range(13, 18)]
        p = start(self.srv, "acquire", "--lease", "0", "--group", "pr-18", "--cancel",
                  "in-progress", "--group", "repo-x", "--holder", "pr-18/run-1")
        self.addCleanup(kill_tree, p)
        sixth = wait_until(lambda: self.queue("sem/group/repo-x"), DEADLINE_S,
                           what="a run waiting for repo-x")[0]
        self.assertEqual(sixth["holder"], "pr-18/run-1")
        self.assertIn("sem/group/repo-x", sixth["reason"])
        sem = self.srv.get("/v1/semaphores/group/repo-x").json
        self.assertEqual((sem["limit"], sem["used"], sem["from_pattern"]),
                         (5, 5, "group/repo-*"), sem)
        for cid in held:
            self.assertEqual(self.srv.claim_get(cid)["state"], "held")
        self.srv.release(held[0])
        r = finish(p)
        self.assertEqual((r.rc, r.out.strip()), (0, sixth["id"]), r)
        for cid in held[1:] + [sixth["id"]]:
            self.srv.release(cid)

    def test_group_and_cancel_usage(self):
        # One group: --cancel anywhere is its own, as it always was.
        for args in (["--cancel", "in-progress", "--group", "g1"],
                     ["--group", "g1", "--cancel", "in-progress"]):
            cid = self.acquire(*args, "--grace", "0", "--holder", "g1/run")
            c = self.srv.claim_get(cid)
            self.assertEqual((c["group"], c.get("groups")), ("g1", None), c)
            self.srv.release(cid)
        nine = []
        for n in range(9):
            nine += ["--group", "g9-%d" % n]
        for args, says in ((["--cancel", "pending", "--group", "a", "--group", "b"],
                            "with several groups"),
                           (["--mutex", "m", "--cancel", "pending"], "apply to a --group"),
                           (["--group", "a", "--cancel", "later"], "pending, in-progress or none"),
                           (nine, "at most 8 groups")):
            r = sluice(self.srv, "acquire", *args)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(says, r.err, r)
            r = sluice(self.srv, "run", *args, "--", "true")
            self.assertEqual(r.rc, RUN_USAGE, r)

    # ---- queue clear ---------------------------------------------------------------------

    def waiters(self, key, holders):
        """Background acquires of key's lock (a semaphore: sem/NAME) by
        holders, once each waits at the server; their claim ids."""
        kind, name = key.split("/", 1)
        procs = [start(self.srv, "acquire", "--lease", "0",
                       "--semaphore" if kind == "sem" else "--mutex", name, "--holder", h)
                 for h in holders]
        for p in procs:
            self.addCleanup(kill_tree, p)
        want = set(holders)
        q = wait_until(lambda: (lambda q: q if want <= {c["holder"] for c in q} else None)(
            self.queue(key)), DEADLINE_S, what="%s waiting on %s" % (holders, key))
        return procs, {c["holder"]: c["id"] for c in q}

    def test_queue_clear_cancels_the_waiters_not_the_holders(self):
        self.srv.sem_put("qc-x", 1)
        holder = self.acquire("--semaphore", "qc-x", "--holder", "qc/h")
        procs, ids = self.waiters("sem/qc-x", ["qc/w1", "qc/w2", "qc-o/w3"])
        other_holder = self.acquire("--mutex", "qc-m", "--holder", "qc/mh")
        other_procs, other = self.waiters("mtx/qc-m", ["qc-o/m1"])
        # Lock and prefix: only the waiters of both.
        r = sluice(self.srv, "queue", "clear", "sem/qc-x", "--holder-prefix", "qc-o/")
        self.assertEqual((r.rc, r.out), (0, "canceled 1\n"), r)
        self.assertEqual(self.srv.claim_get(ids["qc-o/w3"])["state"], "canceled")
        r = sluice(self.srv, "queue", "clear", "sem/qc-x")
        self.assertEqual((r.rc, r.out), (0, "canceled 2\n"), r)
        for h in ("qc/w1", "qc/w2", "qc-o/w3"):
            c = self.srv.claim_get(ids[h])
            self.assertEqual((c["state"], c["reason"]), ("canceled", "canceled by an operator"))
        for p in procs:
            r = finish(p)
            self.assertEqual(r.rc, RUN_ENDED, r)
            self.assertIn("canceled by an operator", r.err)
        self.assertEqual(self.srv.claim_get(holder)["state"], "held")
        self.assertEqual(self.srv.claim_get(other["qc-o/m1"])["state"], "pending")
        # By prefix alone, with --json; then nothing left: 0.
        r = sluice(self.srv, "--json", "queue", "clear", "--holder-prefix", "qc-o/")
        self.assertEqual((r.rc, r.json()), (0, {"canceled": 1}), r)
        self.assertEqual(finish(other_procs[0]).rc, RUN_ENDED)
        r = sluice(self.srv, "queue", "clear", "--lock", "sem/qc-x")
        self.assertEqual((r.rc, r.out), (0, "canceled 0\n"), r)
        self.assertEqual(self.srv.claim_get(other_holder)["state"], "held")
        self.srv.release(holder)
        self.srv.release(other_holder)

    def test_queue_clear_usage_errors_exit_2(self):
        for args, says in ((["clear"], "needs a lock"),
                           (["clear", "qc-x"], "mtx/NAME or sem/NAME, not 'qc-x'"),
                           (["clear", "sem/"], "not 'sem/'"),
                           (["clear", "sem/a", "sem/b"], "one lock"),
                           (["clear", "sem/a", "--lock", "sem/a"], "once"),
                           (["clear", "--holder-prefix", ""], "must not be empty"),
                           (["clear", "--lock", "a"], "--lock takes a lock key"),
                           (["list", "--holder-prefix", "p"], "goes with 'queue clear'"),
                           (["cancel", "x", "--holder-prefix", "p"], "goes with 'queue clear'")):
            r = sluice(self.srv, "queue", *args)
            self.assertEqual(r.rc, 2, r)
            self.assertTrue(r.err.startswith("sluice: "), r)
            self.assertIn(says, r.err, r)
            self.assertEqual(r.out, "", r)
        self.assertIn("queue clear", sluice(self.srv, "queue", "--help").out)


class ClearNeedsOperateTest(ServerTestCase):
    CONFIG = ('tokens:\n'
              '  - name: admin\n'
              '    token: "s3cret-admin-0123456789"\n'
              '    admin: true\n'
              '  - name: ci\n'
              '    token: "s3cret-ci-0123456789"\n'
              '    claim: ["ci/"]\n'
              '  - name: ops\n'
              '    token: "s3cret-ops-0123456789"\n'
              '    prefixes: ["ci/"]\n')
    TOKEN = "s3cret-admin-0123456789"

    def test_clearing_needs_the_operate_permission(self):
        r = sluice(self.srv, "queue", "clear", "mtx/ci/m",
                   env=base_env(self.srv, SLUICE_TOKEN="s3cret-ci-0123456789"))
        self.assertEqual(r.rc, 1, r)
        self.assertIn("operate", r.err)
        # prefixes give every permission on them, operate included.
        r = sluice(self.srv, "queue", "clear", "mtx/ci/m",
                   env=base_env(self.srv, SLUICE_TOKEN="s3cret-ops-0123456789"))
        self.assertEqual((r.rc, r.out), (0, "canceled 0\n"), r)
        r = sluice(self.srv, "queue", "clear", "mtx/ci/m",
                   env=base_env(self.srv, SLUICE_TOKEN="s3cret-admin-0123456789"))
        self.assertEqual((r.rc, r.out), (0, "canceled 0\n"), r)


if __name__ == "__main__":
    main()
