"""test_rules.py - a semaphore's rules (preempt, max_pending and on_full,
weights, rate and burst, backdate) through the `sluice` command against a
real sluiced.

Covers: `sluice sem set` with every rule's flag, read back through `sem info
--json` (the server's own JSON), the info fields and the listing's RULES
column; a set without the flags turning the rules off (a PUT replaces the
whole configuration); bad values, refused by sluice (exit 2, with the fix)
or by the server (exit 1, its message as it is); `sluice run` on a
preempting semaphore (a priority-10 run revokes a running one, whose
COMMAND is stopped and which exits 125, and then runs); `queue why` on a
preempting waiter; a rate-limited semaphore (three runs in a row all
succeed, granted at least 2 s apart by the server's own times; `queue why`
on the one waiting for its token says rate).

Nothing sleeps for a fixed time: the tests wait, with deadlines, on files
the commands write and on what the server reports.
"""
import os

from cli_fixture import (RUN_REVOKED, ServerTestCase, base_env, finish, kill_tree, main,
                         parse_fields, parse_table, sluice, start, tmpdir, wait_until)

DEADLINE_S = 20


def grant_ms(claim):
    """A claim's `granted` (the server's clock) as Unix milliseconds."""
    import datetime
    t = datetime.datetime.strptime(claim["granted"], "%Y-%m-%dT%H:%M:%S.%fZ")
    t = t.replace(tzinfo=datetime.timezone.utc)
    return int(round(t.timestamp() * 1000))


class RulesTest(ServerTestCase):

    def ok(self, *args, **kw):
        r = sluice(self.srv, *args, **kw)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", r)
        return r

    def fails(self, rc, *args):
        r = sluice(self.srv, *args)
        self.assertEqual(r.rc, rc, r)
        self.assertEqual(r.out, "", r)
        return r.err

    def claims_of(self, holder):
        return self.srv.get("/v1/claims?holder=" + holder).json["claims"]

    # ---- set, info, list ---------------------------------------------------------------

    def test_set_every_flag(self):
        r = self.ok("sem", "set", "rules-a", "2", "--preempt", "--preempt-grace", "2s",
                    "--max-pending", "3", "--on-full", "drop_oldest", "--rate", "30/1m",
                    "--burst", "1", "--backdate", "1m", "--lease", "1m")
        f = parse_fields(r.out)
        self.assertEqual((f["Limit"], f["Strategy"], f["Lease"]), ("2", "strict", "1m"))
        self.assertEqual(f["Rules"], "preempt, max_pending, rate, backdate")
        self.assertEqual(f["Preempt"], "yes, grace 2s")
        self.assertEqual(f["Max pending"], "3, on full drop_oldest")
        self.assertEqual(f["Rate"], "30/1m, burst 1")
        self.assertEqual(f["Backdate"], "1m")
        self.assertNotIn("Weights", f)
        self.assertNotIn("Inline", f)
        j = self.ok("sem", "info", "rules-a", "--json").json()
        self.assertEqual(j, self.srv.get("/v1/semaphores/rules-a").json)
        self.assertEqual({k: j[k] for k in ("limit", "strategy", "lease", "inline", "preempt",
                                            "preempt_grace", "max_pending", "on_full", "rate",
                                            "burst", "backdate")},
                         {"limit": 2, "strategy": "strict", "lease": "1m", "inline": False,
                          "preempt": True, "preempt_grace": "2s", "max_pending": 3,
                          "on_full": "drop_oldest", "rate": "30/1m", "burst": 1,
                          "backdate": "1m"})
        self.assertEqual(parse_fields(self.ok("pools", "info", "rules-a").out), f)

        # rebalanced: the weights, the default weight, and the skip strategy's overtake limit
        r = self.ok("sem", "set", "rules-w", "8", "--strategy", "rebalanced", "--weight",
                    "acme=3", "--weight", "tenant=b=2", "--default-weight", "2")
        f = parse_fields(r.out)
        self.assertEqual((f["Rules"], f["Weights"]), ("weights", "acme=3, tenant=b=2 (other keys 2)"))
        j = self.ok("sem", "info", "rules-w", "--json").json()
        self.assertEqual((j["weights"], j["default_weight"], j["preempt"], j["rate"]),
                         ({"acme": 3, "tenant=b": 2}, 2, False, None))
        f = parse_fields(self.ok("sem", "set", "rules-w", "8", "--strategy", "rebalanced").out)
        self.assertEqual((f["Rules"], f["Weights"]), ("none", "none (other keys 1)"))
        f = parse_fields(self.ok("sem", "set", "rules-k", "1", "--strategy", "skip",
                                 "--overtake-limit", "30s").out)
        self.assertEqual((f["Overtake limit"], f["Rules"]), ("30s", "none"))
        self.assertEqual(self.ok("sem", "info", "rules-k", "--json").json()["overtake_limit"],
                         "30s")

        # the listing: a narrow RULES column, and (inline) in FROM for an inline semaphore
        self.srv.claim("rules-inline-holder", [{"semaphore": "rules-inline", "limit": 2}])
        names, rows = parse_table(self.ok("sem", "list").out)
        self.assertEqual(names[-2:], ["FROM", "RULES"])
        by = {row["NAME"]: row for row in rows}
        self.assertEqual(by["rules-a"]["RULES"], "preempt,max_pending,rate,backdate")
        self.assertEqual(by["rules-w"]["RULES"], "-")
        self.assertEqual((by["rules-inline"]["FROM"], by["rules-inline"]["RULES"]),
                         ("(inline)", "-"))
        f = parse_fields(self.ok("sem", "info", "rules-inline").out)
        self.assertTrue(f["Inline"].startswith("yes"), f)

        # a set without the rules' flags turns them all off: a PUT replaces everything
        f = parse_fields(self.ok("sem", "set", "rules-a", "2").out)
        self.assertEqual(f["Rules"], "none")
        j = self.ok("sem", "info", "rules-a", "--json").json()
        self.assertEqual((j["preempt"], j["max_pending"], j["rate"], j["backdate"], j["lease"]),
                         (False, None, None, "0", "0"))

    def test_bad_values(self):
        # bad syntax: refused by sluice, exit 2, with the fix
        for args, words in [
                (["--on-full", "oldest"], "--on-full takes reject or drop_oldest"),
                (["--rate", "30"], "--rate takes N/PERIOD"),
                (["--rate", "x/1m"], "such as --rate 30/1m"),
                (["--rate", "5/fortnight"], "--rate takes N/PERIOD"),
                (["--weight", "acme"], "--weight takes KEY=N"),
                (["--weight", "acme=0"], "from 1 to 1000000"),
                (["--weight", "a=1", "--weight", "a=2"], "the key 'a' twice"),
                (["--default-weight", "0"], "--default-weight must be a whole number"),
                (["--max-pending", "-1"], "--max-pending must be a whole number"),
                (["--burst", "0"], "--burst must be a whole number"),
                (["--preempt-grace", "2d"], "48h"),
                (["--backdate", "soon"], "--backdate"),
                (["--preempt=yes"], "--preempt takes no value")]:
            err = self.fails(2, "sem", "set", "rules-bad", "1", *args)
            self.assertIn(words, err, args)
        err = self.fails(2, "sem", "info", "rules-bad", "--preempt")
        self.assertIn("go with 'sem set'", err)
        # the server's own 400s, shown as they are: exit 1
        for args, words in [
                (["--preempt-grace", "2s"], "preempt_grace applies only with"),
                (["--on-full", "drop_oldest"], "on_full applies only with a max_pending"),
                (["--burst", "3"], "burst applies only with a rate"),
                (["--weight", "acme=3"], "rebalanced strategy only"),
                (["--strategy", "rebalanced", "--preempt"], "preempt applies to strict and skip"),
                (["--rate", "5/0s"], "has a period after the '/' that is 0")]:
            err = self.fails(1, "sem", "set", "rules-bad", "1", *args)
            self.assertIn("sluice: cannot configure the semaphore: ", err, args)
            self.assertIn(words, err, args)
        self.assertEqual(self.srv.get("/v1/semaphores/rules-bad").status, 404)

    # ---- preempt -----------------------------------------------------------------------

    def test_run_is_preempted_by_a_higher_priority_run(self):
        d = tmpdir(self)
        os.mkfifo(os.path.join(d, "never"))
        self.ok("sem", "set", "rules-gpu", "1", "--preempt", "--preempt-grace", "10s")
        env = base_env(self.srv, D=d)
        # The low run's command blocks on a FIFO nobody writes to, until it is stopped.
        low = start(self.srv, "run", "--holder", "rules-low", "--semaphore", "rules-gpu", "--",
                    "sh", "-c", 'touch "$D/low.started"; exec cat "$D/never"', env=env,
                    start_new_session=True)
        self.addCleanup(kill_tree, low)
        wait_until(lambda: os.path.exists(os.path.join(d, "low.started")), DEADLINE_S,
                   what="the low run's command to start")
        high = start(self.srv, "run", "--holder", "rules-high", "--priority", "10",
                     "--semaphore", "rules-gpu", "--", "sh", "-c", 'touch "$D/high.ran"',
                     env=env, start_new_session=True)
        self.addCleanup(kill_tree, high)
        r = finish(low)
        self.assertEqual(r.rc, RUN_REVOKED, r)
        self.assertIn("preempted by a waiting claim of higher priority", r.err)
        r = finish(high)
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(os.path.exists(os.path.join(d, "high.ran")))
        low_claim = self.claims_of("rules-low")[0]
        high_claim = self.claims_of("rules-high")[0]
        self.assertEqual(low_claim["state"], "canceled")
        self.assertEqual(low_claim["by"], high_claim["id"])
        self.assertEqual(high_claim["state"], "released")

    def test_why_on_a_preempting_waiter(self):
        self.ok("sem", "set", "rules-p2", "1", "--preempt", "--preempt-grace", "1m")
        low = self.srv.claim("rules-p2-low", [("s", "rules-p2")])
        high = self.srv.claim("rules-p2-high", [("s", "rules-p2")], priority=10)
        self.assertEqual(high["state"], "pending")
        self.assertEqual(self.srv.claim_get(low["id"])["state"], "revoking")
        out = self.ok("queue", "why", high["id"]).out
        self.assertIn("sem/rules-p2: preempt: 1 holder revoking; their slots will let it in",
                      out)
        why = self.ok("queue", "why", high["id"], "--json").json()
        self.assertEqual(why["reasons"][0]["preempt"], {"status": "waiting", "holders": 1,
                                                       "preempted": 1})
        self.srv.release(low["id"])
        self.assertEqual(self.srv.claim_get(high["id"])["state"], "held")
        self.srv.release(high["id"])

    # ---- rate --------------------------------------------------------------------------

    def test_rate_limited_runs(self):
        self.ok("sem", "set", "rules-api", "10", "--rate", "30/1m", "--burst", "1")
        # the first takes the bucket's one token; the second waits for the next, 2 s on
        self.ok("run", "--holder", "rules-api-1", "--semaphore", "rules-api", "--", "true")
        second = start(self.srv, "run", "--holder", "rules-api-2", "--semaphore", "rules-api",
                       "--", "true", start_new_session=True)
        self.addCleanup(kill_tree, second)
        waiting = wait_until(lambda: self.claims_of("rules-api-2"), DEADLINE_S,
                             what="the second run's claim")[0]
        if waiting["state"] == "pending":  # not yet granted (a slow machine might be later)
            r = sluice(self.srv, "queue", "why", waiting["id"])
            self.assertEqual(r.rc, 0, r)
            if "is pending" in r.out:
                _, rows = parse_table(r.out.split("\n", 1)[1].split("\n\n")[0])
                self.assertEqual((rows[0]["LOCK"], rows[0]["RULE"]), ("sem/rules-api", "rate"))
                self.assertRegex(r.out, r"sem/rules-api: rate: admitted at \d{4}-")
        self.assertEqual(finish(second).rc, 0)
        self.ok("run", "--holder", "rules-api-3", "--semaphore", "rules-api", "--", "true")
        grants = []
        for n in (1, 2, 3):
            listed = self.ok("claims", "list", "--holder", "rules-api-%d" % n, "--json").json()
            (claim,) = listed["claims"]
            self.assertEqual(claim["state"], "released")
            grants.append(grant_ms(claim))
        # The server's grant times: one token every 2 s (30 a minute, a bucket of 1).
        self.assertGreaterEqual(grants[1] - grants[0], 2000, grants)
        self.assertGreaterEqual(grants[2] - grants[1], 2000, grants)

    def test_why_says_rate(self):
        self.ok("sem", "set", "rules-slow", "5", "--rate", "1/1h", "--burst", "1")
        # One token an hour: of two claims, one at least waits for its token. (The first
        # may wait too: the server refills its buckets from its start, not from a bucket's
        # first use, on a server up for less than the period.)
        first = self.srv.claim("rules-slow-1", [("s", "rules-slow")])
        second = self.srv.claim("rules-slow-2", [("s", "rules-slow")])
        waiting = first if first["state"] == "pending" else second
        self.assertEqual(waiting["state"], "pending")
        r = self.ok("queue", "why", waiting["id"])
        _, rows = parse_table(r.out.split("\n", 1)[1].split("\n\n")[0])
        self.assertEqual((rows[0]["LOCK"], rows[0]["RULE"]), ("sem/rules-slow", "rate"))
        why = self.srv.get("/v1/claims/%s/why" % waiting["id"]).json
        self.assertIn("sem/rules-slow: rate: admitted at %s" % why["reasons"][0]["admit_at"],
                      r.out)
        self.srv.release(second["id"])
        self.srv.release(first["id"])

if __name__ == "__main__":
    main()
