#!/usr/bin/env python3
"""integrations/github_action: the composite action
integrations/github-action/action.yml, run as GitHub's runner runs it
(gha_runner.py), against a real sluiced.

- a mutex shared by two jobs: the second waits while the first runs;
- concurrency groups in GitHub's vocabulary: cancel-in-progress false (a
  newer run replaces an older pending one) and true (it stops the running
  one), and the `cancelled` input;
- the outputs (claim id, fencing token), semaphores with slots, tags;
- bad inputs refused with ::error:: lines;
- install: the sluice on PATH; none and install: never; none and install:
  auto, which builds the client from this source tree (cmake
  -DSLUICE_CLIENT_ONLY=ON) into the tool cache and uses it.
"""
import os
import shutil
import unittest

from recipe_fixture import (ServerTestCase, base_env, claims_of, lock_names, main,
                            read, recipe, tmpdir, wait_claim, wait_file)
import gha_runner

ACTION = recipe("github-action")
CONFIG = """
semaphores:
  - name: deploy-slots
    limit: 2
  - name: tag/env=prod
    limit: 1
"""

WAIT_FOR = 'for i in $(seq 600); do [ -e "%s" ] && break; sleep 0.05; done; [ -e "%s" ]'


class GitHubActionTest(ServerTestCase):
    CONFIG = CONFIG

    def action(self, work, run_id, job="build", env=None, **inputs):
        github = {"repository": "acme/shop", "run_id": run_id, "job": job}
        run = gha_runner.ActionRun(ACTION, inputs, env or base_env(self.srv), github, work)
        self.addCleanup(run.kill)
        return run

    def holder(self, run_id, job="build"):
        return "acme/shop/%s/%s" % (run_id, job)

    def test_mutex_second_job_waits(self):
        d = tmpdir(self)
        go = os.path.join(d, "go")
        a = self.action(d, 101, mutex="deploy/prod",
                        run='echo a >> order; touch a.started; ' + WAIT_FOR % (go, go)).start()
        wait_file(os.path.join(d, "a.started"))
        b = self.action(d, 102, mutex="deploy/prod", run="echo b >> order").start()
        pending = wait_claim(self.srv, self.holder(102), "pending")
        self.assertIn("mtx/deploy/prod", lock_names(pending))
        self.assertEqual(read(os.path.join(d, "order")), "a\n")
        open(go, "w").close()
        ra, rb = a.finish(), b.finish()
        self.assertEqual((ra.rc, rb.rc), (0, 0), (ra, rb))
        self.assertEqual(read(os.path.join(d, "order")), "a\nb\n")
        # The outputs: the claim the commands ran under, its first token.
        done = claims_of(self.srv, self.holder(101))[0]
        self.assertEqual(ra.outputs["claim-id"], done["id"], ra)
        self.assertEqual(ra.outputs["fencing-token"], str(done["locks"][0]["token"]), ra)
        self.assertEqual(done["state"], "released")
        tokens = [int(r.outputs["fencing-token"]) for r in (ra, rb)]
        self.assertLess(tokens[0], tokens[1])

    def test_cancel_in_progress_stops_running_job(self):
        d = tmpdir(self)
        never = os.path.join(d, "never")
        a = self.action(d, 201, group="shop-deploy-main", **{"cancel-in-progress": "true"},
                        grace="20s", run="touch a.started; " + WAIT_FOR % (never, never)).start()
        wait_file(os.path.join(d, "a.started"))
        b = self.action(d, 202, group="shop-deploy-main", **{"cancel-in-progress": "true"},
                        run="touch b.ran").run()
        self.assertEqual(b.rc, 0, b)
        ra = a.finish()
        self.assertNotEqual(ra.rc, 0, ra)
        self.assertIn("::warning::", ra.out)
        self.assertIn("shop-deploy-main", ra.out)
        self.assertTrue(os.path.exists(os.path.join(d, "b.ran")))
        ended = claims_of(self.srv, self.holder(201))[0]
        self.assertEqual(ended["state"], "canceled", ended)

    def test_cancel_pending_replaces_waiting_job(self):
        d = tmpdir(self)
        go = os.path.join(d, "go")
        grp = {"group": "shop-pr-7", "cancel-in-progress": "false"}
        a = self.action(d, 301, run="touch a.started; " + WAIT_FOR % (go, go), **grp).start()
        wait_file(os.path.join(d, "a.started"))
        b = self.action(d, 302, run="touch b.ran", cancelled="success", **grp).start()
        wait_claim(self.srv, self.holder(302), "pending")
        c = self.action(d, 303, run="touch c.ran", **grp).start()
        superseded = wait_claim(self.srv, self.holder(302), "superseded")
        self.assertIn("superseded", superseded["reason"])
        rb = b.finish()
        # cancelled: success makes the replaced job's step pass, with a warning.
        self.assertEqual(rb.rc, 0, rb)
        self.assertIn("::warning::", rb.out)
        wait_claim(self.srv, self.holder(303), "pending")
        open(go, "w").close()
        ra, rc = a.finish(), c.finish()
        self.assertEqual((ra.rc, rc.rc), (0, 0), (ra, rc))
        self.assertFalse(os.path.exists(os.path.join(d, "b.ran")))
        self.assertTrue(os.path.exists(os.path.join(d, "c.ran")))

    def test_semaphore_slots_tags_and_environment(self):
        d = tmpdir(self)
        r = self.action(d, 401, job="deploy", semaphore="deploy-slots:2", tag="env=prod",
                        priority="5", lease="1m", timeout="30s",
                        run='echo "$SLUICE_FENCING_TOKENS" > tokens\n'
                            'test "$(pwd)" = "%s/sub"' % d,
                        **{"working-directory": "sub"})
        os.makedirs(os.path.join(d, "sub"))
        res = r.run()
        self.assertEqual(res.rc, 0, res)
        tokens = read(os.path.join(d, "sub", "tokens"))
        self.assertIn("sem/deploy-slots=", tokens)
        self.assertIn("sem/tag/env=prod=", tokens)
        claim = claims_of(self.srv, self.holder(401, "deploy"))[0]
        self.assertEqual(claim["priority"], 5)
        self.assertEqual([lk["slots"] for lk in claim["locks"] if lk["name"] == "deploy-slots"],
                         [2])

    def test_failing_commands_fail_the_step(self):
        d = tmpdir(self)
        # GitHub's bash options: -e stops at the first failure, pipefail sees it in a pipe.
        res = self.action(d, 501, mutex="m501", run="false | cat\ntouch after").run()
        self.assertEqual(res.rc, 1, res)
        self.assertFalse(os.path.exists(os.path.join(d, "after")))
        self.assertEqual(claims_of(self.srv, self.holder(501))[0]["state"], "released")

    def test_bad_inputs(self):
        d = tmpdir(self)
        cases = [
            ({"run": "true"}, "nothing to hold"),
            ({"run": "true", "group": "g", "cancel-in-progress": "yes"},
             "cancel-in-progress must be true or false, not 'yes'"),
            ({"run": "true", "mutex": "m", "cancelled": "maybe"},
             "cancelled must be failure or success"),
        ]
        for inputs, message in cases:
            res = self.action(d, 601, **inputs).run()
            self.assertEqual(res.rc, 2, res)
            self.assertIn("::error::" + message, res.out)
        # A name the server refuses: sluice's own message, the step fails.
        res = self.action(d, 602, mutex="a//b", run="true").run()
        self.assertEqual(res.rc, 121, res)
        self.assertIn("//", res.out)
        with self.assertRaises(AssertionError):
            self.action(d, 603, mutex="m", run="true", mutexes="typo")

    def test_install_never_without_sluice(self):
        d = tmpdir(self)
        env = base_env(self.srv, with_sluice=False)
        res = self.action(d, 701, env=env, mutex="m", run="true", install="never").run()
        self.assertEqual(res.rc, 1, res)
        self.assertIn("::error::sluice is not on PATH", res.out)

    def test_install_auto_builds_the_client(self):
        if not shutil.which("cmake"):
            self.skipTest("cmake is not installed")
        d = tmpdir(self)
        env = base_env(self.srv, with_sluice=False)
        res = self.action(d, 801, env=env, mutex="m801", run="command -v sluice > where").run(
            timeout=600)
        self.assertEqual(res.rc, 0, res)
        self.assertIn("built sluice", res.out)
        where = read(os.path.join(d, "where")).strip()
        self.assertTrue(where.startswith(os.path.join(d, "toolcache", "sluice", "bin")), where)
        self.assertEqual(claims_of(self.srv, self.holder(801))[0]["state"], "released")
        # The next job on this runner finds it in the tool cache.
        res = self.action(d, 802, env=env, mutex="m802", run="true").run()
        self.assertEqual(res.rc, 0, res)
        self.assertIn("using " + os.path.join(d, "toolcache", "sluice", "bin", "sluice"), res.out)


if __name__ == "__main__":
    main()
