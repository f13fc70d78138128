#!/usr/bin/env python3
"""integrations/jenkins: the `sh` steps of integrations/jenkins/Jenkinsfile,
run as a Jenkins agent runs them (the Groovy string's text, its
backslash-newlines joined as Groovy joins them, by `sh -xe`, with Jenkins'
JOB_NAME, BUILD_NUMBER and BRANCH_NAME and the pipeline's environment, the
credential's value standing for credentials()), against a real sluiced.
"""
import os
import re
import unittest

from recipe_fixture import (Job, ServerTestCase, base_env, claims_of, lock_names, main, read,
                            recipe, tmpdir, wait_claim, wait_file, write_exec)

CONFIG = """
semaphores:
  - name: ci/integration-db
    limit: 2
"""

WAIT_GO = 'for i in $(seq 600); do [ -e go."$BUILD_NUMBER" ] && exit 0; sleep 0.05; done; exit 1'
STAGE = re.compile(r"stage\('([^']+)'\)")
SH = re.compile(r"sh\s+'''(.*?)'''", re.S)


def groovy_text(s):
    """A ''' string's value: \\ + newline joins lines; \\\\ and \\' unescape."""
    return re.sub(r"\\(\n|\\|')", lambda m: "" if m.group(1) == "\n" else m.group(1), s)


def sh_steps():
    """{stage name: [sh step text, ...]} of the Jenkinsfile."""
    with open(recipe("jenkins", "Jenkinsfile"), encoding="utf-8") as f:
        text = f.read()
    stages = {}
    marks = list(STAGE.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        stages[m.group(1)] = [groovy_text(s) for s in SH.findall(text, m.end(), end)]
    return stages, text


class JenkinsTest(ServerTestCase):
    CONFIG = CONFIG

    def setUp(self):
        self.steps, self.text = sh_steps()
        self.assertEqual(sorted(self.steps), ["Deploy", "Test"])
        self.dir = tmpdir(self)
        write_exec(os.path.join(self.dir, "deploy.sh"),
                   '#!/bin/sh\necho "$@" > deployed.$BUILD_NUMBER\n'
                   'touch started.$BUILD_NUMBER\n' + WAIT_GO + '\n')
        write_exec(os.path.join(self.dir, "it.sh"),
                   '#!/bin/sh\ntouch started.$BUILD_NUMBER\n' + WAIT_GO + '\n')
        with open(os.path.join(self.dir, "Makefile"), "w") as f:
            f.write("integration-test:\n\t./it.sh\n")

    def start(self, stage, build, job="shop/main", branch="main"):
        env = base_env(self.srv, JOB_NAME=job, BUILD_NUMBER=build, BRANCH_NAME=branch,
                       SLUICE_TOKEN="")  # the credential (the test's server has no tokens)
        # The pipeline's environment block names the server (the test's own
        # server stands in for it through base_env).
        env_block = re.search(r"^    environment \{\n(.*?)^    \}", self.text, re.M | re.S)
        self.assertTrue(env_block, "the pipeline has no environment block")
        self.assertRegex(env_block.group(1),
                         r"(?m)^\s+SLUICE_SERVER = 'https?://[^'\s]+'$")
        (step,) = self.steps[stage]
        return Job(self, ["sh", "-xe", "-c", step], env, self.dir)

    def started(self, build):
        wait_file(os.path.join(self.dir, "started.%d" % build))

    def go(self, build):
        open(os.path.join(self.dir, "go.%d" % build), "w").close()

    def test_deploy_stage_holds_production(self):
        a = self.start("Deploy", 7)
        self.started(7)
        b = self.start("Deploy", 8)
        wait_claim(self.srv, "shop/main/8/deploy", "pending")
        self.go(7)
        self.go(8)
        self.assertEqual(a.finish().rc, 0, a)
        self.assertEqual(b.finish().rc, 0, b)
        held = claims_of(self.srv, "shop/main/7/deploy")[0]
        token = lock_names(held)["mtx/deploy/production"]
        self.assertEqual(read(os.path.join(self.dir, "deployed.7")),
                         "production --fencing-token %d\n" % token)

    def test_newer_build_stops_tests_of_same_branch(self):
        old = self.start("Test", 30, job="shop/feature-x", branch="feature-x")
        self.started(30)
        new = self.start("Test", 31, job="shop/feature-x", branch="feature-x")
        canceled = wait_claim(self.srv, "shop/feature-x/30/test", "canceled")
        self.assertEqual(old.finish().rc, 125, old)
        self.started(31)
        self.go(31)
        self.assertEqual(new.finish().rc, 0, new)
        newer = claims_of(self.srv, "shop/feature-x/31/test")[0]
        self.assertEqual(canceled["by"], newer["id"])
        self.assertIn("sem/ci/integration-db", lock_names(newer))


if __name__ == "__main__":
    main()
