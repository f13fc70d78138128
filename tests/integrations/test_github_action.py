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
- group names: any string GitHub accepts (spaces, '#', case) maps to a
  valid sluice group, injectively after ASCII case folding (group.sh), and
  "prod" and "Prod" wait for each other;
- install: the sluice on PATH; none and install: never; none and install:
  auto, which builds the client from this source tree (cmake
  -DSLUICE_CLIENT_ONLY=ON) into the tool cache (sluice/VERSION/ARCH) and
  uses it; a cached sluice of another version is not used; a copy of the
  action in a repository (./.github/actions/sluice) builds from `source:`;
- TLS (GitHubActionTLSTest): a sluiced that asks for client certificates,
  reached with ca-cert, client-cert and client-key given as PEM text (private
  0600 files, removed after the step, failed or not, and the text kept from
  the commands) or as files in the workspace; a missing CA or key refused.
"""
import glob
import json
import os
import re
import shutil
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.request

from recipe_fixture import (DEADLINE_S, ServerTestCase, base_env, claims_of, lock_names, main,
                            read, recipe, sluice_bin, tmpdir, wait_claim, wait_file)
import gha_runner
from test_tls import Server as TLSServer, make_ca, make_cert  # tests/server: certificates by openssl

ACTION = recipe("github-action")
CONFIG = """
semaphores:
  - name: deploy-slots
    limit: 2
  - name: tag/env=prod
    limit: 1
"""

GROUP_SH = os.path.join(ACTION, "group.sh")
# A sluice group: a lock name (src/engine/names.c) of at most 247 bytes.
GROUP_OK = re.compile(r"^(?!/)(?!.*//)(?!.*/$)[A-Za-z0-9._/:=-]{1,247}$")
VERSION = re.search(r"project\(sluice VERSION ([^ )]+)",
                    read(os.path.join(ACTION, "..", "..", "CMakeLists.txt"))).group(1)
ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(os.uname().machine,
                                                                 os.uname().machine.lower())


def sluice_group(name):
    """What the action makes of a `concurrency.group` (group.sh)."""
    out = subprocess.run(["bash", GROUP_SH, name], check=True, capture_output=True).stdout
    assert out.endswith(b"\n"), out
    return out[:-1].decode("ascii")


def fake_sluice(path, version):
    """A sluice that says it is `version` and runs the real one."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write('#!/bin/sh\n[ "$1" = --version ] && { echo "sluice %s"; exit 0; }\n'
                'exec "%s" "$@"\n' % (version, os.path.abspath(sluice_bin())))
    os.chmod(path, 0o755)


def log_tail(text):
    """The end of sluiced's log, for a failure's message."""
    return "---- sluiced's log (its last 4000 characters) ----\n" + text[-4000:]


WAIT_FOR = 'for i in $(seq 600); do [ -e "%s" ] && break; sleep 0.05; done; [ -e "%s" ]'


class GitHubActionTest(ServerTestCase):
    CONFIG = CONFIG

    def action(self, work, run_id, job="build", env=None, action=ACTION, **inputs):
        github = {"repository": "acme/shop", "run_id": run_id, "job": job}
        run = gha_runner.ActionRun(action, inputs, env or base_env(self.srv), github, work)
        run.diagnose = lambda: log_tail(self.srv.stderr())
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

    def test_group_names_github_accepts(self):
        # E2: GitHub's documented ${{ github.workflow }}-${{ github.ref }} with a
        # workflow "Node.js CI", and a branch with '#': the step runs, and its
        # log says which sluice group the name became.
        d = tmpdir(self)
        for run_id, name, want in (
                (1001, "Node.js CI-refs/heads/main", "node.js=20ci-refs/heads/main"),
                (1002, "deploy-feature/#123-fix", "deploy-feature/=23123-fix")):
            res = self.action(d, run_id, group=name, run="true").run()
            self.assertEqual(res.rc, 0, res)
            self.assertIn("concurrency group '%s' is the sluice group '%s'" % (name, want),
                          res.out)
            claim = claims_of(self.srv, self.holder(run_id))[0]
            self.assertIn("mtx/group/" + want, lock_names(claim))

    def test_group_mapping_is_valid_and_injective(self):
        # E2, E3: every name maps to a valid group; names equal after ASCII
        # case folding map to one group, all others to different ones.
        long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
        names = ["prod", "Prod", "PROD", "a b", "a=20b", "a=b", "a=3Db", "a/b", "a=2Fb",
                 "a//b", "a/=2F/b", "/a", "a/", "/", "//", ".", "..", "...", "a/./b",
                 "a/../b", "a/=2E/b", "#", "%23", "a\nb", "a\tb", "é", "É", "=C3=A9",
                 "refs/pull/7/merge", "Node.js CI-refs/heads/main", long_a, long_b,
                 long_a.upper(), "é" * 200, "=" * 100, "/" * 120, "a" * 247, "a" * 248, ""]
        groups = {}
        for name in names:
            g = sluice_group(name)
            if name:
                self.assertRegex(g, GROUP_OK, name)
                self.assertFalse(re.search(r"(^|/)\.\.?(/|$)", g), (name, g))
            groups.setdefault(name.encode().lower(), set()).add(g)
        for folded, gs in groups.items():
            self.assertEqual(len(gs), 1, (folded, gs))
        self.assertEqual(len({g for gs in groups.values() for g in gs}), len(groups), groups)
        self.assertEqual(sluice_group("acme/shop/deploy-main"), "acme/shop/deploy-main")
        self.assertEqual(sluice_group("a" * 247), "a" * 247)
        hashed = sluice_group("é" * 200)
        self.assertRegex(hashed, r"^(=C3=A9)+==[0-9a-f]{64}$")

    def test_group_case_is_folded(self):
        # E3: GitHub's group names are case-insensitive: "Prod" waits for "prod".
        d = tmpdir(self)
        go = os.path.join(d, "go")
        a = self.action(d, 1101, group="prod", run="touch a.started; " + WAIT_FOR % (go, go))
        a.start()
        wait_file(os.path.join(d, "a.started"))
        b = self.action(d, 1102, group="Prod", run="touch b.ran").start()
        pending = wait_claim(self.srv, self.holder(1102), "pending")
        self.assertIn("mtx/group/prod", lock_names(pending))
        self.assertFalse(os.path.exists(os.path.join(d, "b.ran")))
        open(go, "w").close()
        ra, rb = a.finish(), b.finish()
        self.assertEqual((ra.rc, rb.rc), (0, 0), (ra, rb))
        self.assertTrue(os.path.exists(os.path.join(d, "b.ran")))

    def test_tool_cache_by_version_and_arch(self):
        # E13: a sluice cached by an older action is not used; the one of the
        # source's version, complete, for this architecture, is.
        d = tmpdir(self)
        cache = os.path.join(d, "toolcache", "sluice")
        fake_sluice(os.path.join(cache, "bin", "sluice"), "0.0.1-old")  # the old layout
        fake_sluice(os.path.join(cache, "0.0.1", ARCH, "bin", "sluice"), "0.0.1")
        open(os.path.join(cache, "0.0.1", ARCH + ".complete"), "w").close()
        mine = os.path.join(cache, VERSION, ARCH, "bin", "sluice")
        fake_sluice(mine, VERSION)
        open(os.path.join(cache, VERSION, ARCH + ".complete"), "w").close()
        env = base_env(self.srv, with_sluice=False)
        res = self.action(d, 1201, env=env, mutex="m1201", install="auto",
                          run="command -v sluice > where").run()
        self.assertEqual(res.rc, 0, res)
        self.assertIn("using %s (sluice %s, from the tool cache)" % (mine, VERSION), res.out)
        self.assertEqual(read(os.path.join(d, "where")).strip(), mine)

    def test_copy_in_a_repository(self):
        # E13: the documented route "copy the directory into your repository":
        # without the source it says what to do; with source: it uses it.
        d = tmpdir(self)
        copy = os.path.join(d, ".github", "actions", "sluice")
        shutil.copytree(ACTION, copy)
        env = base_env(self.srv, with_sluice=False)
        res = self.action(d, 1301, env=env, action=copy, mutex="m1301", run="true").run()
        self.assertEqual(res.rc, 1, res)
        self.assertIn("::error::this copy of the action has no sluice source to build from",
                      res.out)
        self.assertIn("give its directory as source:", res.out)
        res = self.action(d, 1302, env=env, action=copy, mutex="m1302", run="true",
                          source="nowhere").run()
        self.assertEqual(res.rc, 1, res)
        self.assertIn("::error::source: no sluice source at %s/nowhere" % d, res.out)
        # With sluice's source checked out beside it (here: this tree, linked
        # into the workspace) the copy finds that version in the tool cache.
        os.symlink(os.path.abspath(os.path.join(ACTION, "..", "..")),
                   os.path.join(d, "sluice-src"))
        mine = os.path.join(d, "toolcache", "sluice", VERSION, ARCH, "bin", "sluice")
        fake_sluice(mine, VERSION)
        open(os.path.join(d, "toolcache", "sluice", VERSION, ARCH + ".complete"), "w").close()
        res = self.action(d, 1303, env=env, action=copy, mutex="m1303", run="true",
                          source="sluice-src").run()
        self.assertEqual(res.rc, 0, res)
        self.assertIn("using " + mine, res.out)
        self.assertEqual(claims_of(self.srv, self.holder(1303))[0]["state"], "released")

    def test_a_run_that_overruns_is_stopped_whole(self):
        # The harness itself: a step still running at the run's deadline is
        # killed with its children (bash, sluice run, the command), which hold
        # the runner's output; the failure names the step and shows the
        # server's log, at once rather than when the command would have ended.
        d = tmpdir(self)
        run = self.action(d, 1401, mutex="m1401", run="touch started; exec sleep 60").start()
        wait_file(os.path.join(d, "started"))
        t0 = time.monotonic()
        with self.assertRaises(AssertionError) as failed:
            run.finish(timeout=1)
        self.assertLess(time.monotonic() - t0, DEADLINE_S)
        self.assertIn("step 2 (Run under sluice) hung", str(failed.exception))
        self.assertIn("sluiced's log", str(failed.exception))

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
        self.assertEqual(where, os.path.join(d, "toolcache", "sluice", VERSION, ARCH, "bin",
                                             "sluice"))
        self.assertEqual(claims_of(self.srv, self.holder(801))[0]["state"], "released")
        # The next job on this runner finds it in the tool cache.
        res = self.action(d, 802, env=env, mutex="m802", run="true").run()
        self.assertEqual(res.rc, 0, res)
        self.assertIn("using " + where, res.out)


class GitHubActionTLSTest(unittest.TestCase):
    """The action against a sluiced over mTLS (tls.client_ca): the job reaches it with the
    TLS inputs, as files or as secrets' PEM text."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluice-gha-tls-")
        make_ca(cls.dir, "ca")
        make_ca(cls.dir, "other")
        make_cert(cls.dir, "srv", "ca", "sluiced")
        make_cert(cls.dir, "runner", "ca", "ci-runner")
        try:
            cls.srv = TLSServer(cls.dir, ["--tls-cert", cls.path("srv.pem"), "--tls-key",
                                          cls.path("srv.key"), "--tls-client-ca", cls.path("ca.pem")])
        except BaseException:
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.srv.stop()
        finally:
            shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    @classmethod
    def pem(cls, name):
        return read(cls.path(name))

    def action(self, work, run_id, **inputs):
        env = base_env(None)
        env["SLUICE_SERVER"] = "https://localhost:%d" % self.srv.port
        run = gha_runner.ActionRun(ACTION, inputs, env, {"repository": "acme/shop",
                                                         "run_id": run_id, "job": "tls"}, work)
        run.diagnose = lambda: log_tail(self.srv.text())
        self.addCleanup(run.kill)
        return run

    def claim(self, cid):
        """A claim as the server has it, read over mTLS."""
        ctx = ssl.create_default_context(cafile=self.path("ca.pem"))
        ctx.load_cert_chain(self.path("runner.pem"), self.path("runner.key"))
        with urllib.request.urlopen("https://localhost:%d/v1/claims/%s" % (self.srv.port, cid),
                                    context=ctx, timeout=10) as r:
            return json.loads(r.read())

    def test_tls_inputs_as_pem_text(self):
        # Secrets hold PEM text: each becomes a private file for the step's sluice.
        d = tmpdir(self)
        run = self.action(d, 2101, mutex="deploy/tls",
                          **{"ca-cert": self.pem("ca.pem"), "client-cert": self.pem("runner.pem"),
                             "client-key": self.pem("runner.key")},
                          run='stat -c %a "$SLUICE_CACERT" "$SLUICE_CERT" "$SLUICE_KEY" > modes\n'
                              'echo "$SLUICE_KEY" > key-path\n'
                              'env > commands-env')
        res = run.run()
        self.assertEqual(res.rc, 0, res)
        self.assertEqual(read(os.path.join(d, "modes")).split(), ["600"] * 3)
        key_path = read(os.path.join(d, "key-path")).strip()
        self.assertTrue(key_path.startswith(run.temp + "/sluice-tls."), key_path)
        self.assertEqual(glob.glob(os.path.join(run.temp, "sluice-tls.*")), [], "left behind")
        self.assertNotIn("PRIVATE KEY", read(os.path.join(d, "commands-env")))
        claim = self.claim(res.outputs["claim-id"])
        self.assertEqual(claim["state"], "released")
        self.assertEqual(claim["holder"], "acme/shop/2101/tls")
        self.assertEqual(res.outputs["fencing-token"], str(claim["locks"][0]["token"]))

    def test_tls_inputs_as_files(self):
        d = tmpdir(self)
        os.makedirs(os.path.join(d, "certs"))
        for name in ("ca.pem", "runner.pem", "runner.key"):
            shutil.copy(self.path(name), os.path.join(d, "certs", name))
        res = self.action(d, 2201, mutex="deploy/tls", run="true",
                          **{"ca-cert": "certs/ca.pem", "client-cert": "certs/runner.pem",
                             "client-key": os.path.join(d, "certs", "runner.key")}).run()
        self.assertEqual(res.rc, 0, res)
        self.assertEqual(self.claim(res.outputs["claim-id"])["state"], "released")
        # The job's own SLUICE_* variables, with no input: as for sluice itself.
        run = self.action(d, 2202, mutex="deploy/tls", run="true")
        run.env.update(SLUICE_CACERT=self.path("ca.pem"), SLUICE_CERT=self.path("runner.pem"),
                       SLUICE_KEY=self.path("runner.key"))
        res = run.run()
        self.assertEqual(res.rc, 0, res)

    def test_tls_refusals(self):
        d = tmpdir(self)
        # A server certificate of a CA not given: sluice says so, and the step fails at
        # once (no retrying until SLUICE_CLAIM_TIMEOUT's 10 minutes).
        run = self.action(d, 2301, mutex="deploy/tls", run="touch ran",
                          **{"ca-cert": self.pem("other.pem"), "client-cert": self.pem("runner.pem"),
                             "client-key": self.pem("runner.key")})
        res = run.run(timeout=30)
        self.assertEqual(res.rc, 122, res)
        self.assertIn("the certificate of https://localhost:%d was not accepted" % self.srv.port,
                      res.out)
        self.assertFalse(os.path.exists(os.path.join(d, "ran")))
        self.assertEqual(glob.glob(os.path.join(run.temp, "sluice-tls.*")), [], "left behind")
        # A key without its certificate, and a file that is not there.
        res = self.action(d, 2302, mutex="m", run="true",
                          **{"client-key": self.pem("runner.key")}).run()
        self.assertEqual(res.rc, 2, res)
        self.assertIn("::error::client-key needs client-cert", res.out)
        res = self.action(d, 2303, mutex="m", run="true", **{"ca-cert": "certs/nope.pem"}).run()
        self.assertEqual(res.rc, 2, res)
        self.assertIn("::error::ca-cert: no readable file at %s/certs/nope.pem" % d, res.out)


if __name__ == "__main__":
    main()
