#!/usr/bin/env python3
"""integrations/gitlab_ci: the jobs of integrations/gitlab-ci/.gitlab-ci.yml,
run as a GitLab runner with the bash shell runs them (before_script and
script lines under `set -eo pipefail`, the file's variables overridden by
the project's CI/CD variables, GitLab's predefined CI_* variables), against
a real sluiced. The project's own Makefile and deploy.sh are the test's.
"""
import os
import unittest

import yaml

from recipe_fixture import (Job, ServerTestCase, base_env, claims_of, lock_names, main, read,
                            recipe, tmpdir, wait_claim, wait_file, write_exec)

CONFIG = """
semaphores:
  - name: ci/integration-db
    limit: 2
"""

WAIT_GO = 'for i in $(seq 600); do [ -e go."$CI_PIPELINE_ID" ] && exit 0; sleep 0.05; done; exit 1'


def load_jobs():
    with open(recipe("gitlab-ci", ".gitlab-ci.yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def job_script(doc, name):
    """The job's lines, its `extends` template's first (one level, as here)."""
    job = dict(doc[name])
    base = doc.get(job.get("extends", ""), {})
    lines = list(base.get("before_script", [])) + list(job.get("before_script", []))
    lines += list(job["script"])
    return "set -eo pipefail\n" + "\n".join(lines) + "\n"


class GitLabCiTest(ServerTestCase):
    CONFIG = CONFIG

    def setUp(self):
        self.doc = load_jobs()
        self.dir = tmpdir(self)
        write_exec(os.path.join(self.dir, "deploy.sh"),
                   '#!/bin/sh\necho "$@" >> deployed.$CI_PIPELINE_ID\n'
                   'touch started.$CI_PIPELINE_ID\n' + WAIT_GO + '\n')
        write_exec(os.path.join(self.dir, "it.sh"),
                   '#!/bin/sh\ntouch started.$CI_PIPELINE_ID\n' + WAIT_GO + '\n')
        with open(os.path.join(self.dir, "Makefile"), "w") as f:
            f.write("integration-test:\n\t./it.sh\n")

    def start(self, name, pipeline, project="acme/shop", ref="main", **more):
        env = base_env(self.srv)
        env.update({str(k): str(v) for k, v in self.doc.get("variables", {}).items()})
        # Project CI/CD variables beat the file's: the test's server.
        env["SLUICE_SERVER"] = "http://127.0.0.1:%d" % self.srv.port
        env.update({"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_PATH": project,
                    "CI_PIPELINE_ID": str(pipeline), "CI_JOB_NAME": name,
                    "CI_COMMIT_REF_SLUG": ref,
                    "CI_ENVIRONMENT_NAME": self.doc[name].get("environment", "")})
        env.update(more)
        return Job(self, ["bash", "-c", job_script(self.doc, name)], env, self.dir)

    def go(self, pipeline):
        open(os.path.join(self.dir, "go.%d" % pipeline), "w").close()

    def started(self, pipeline):
        wait_file(os.path.join(self.dir, "started.%d" % pipeline))

    def test_deploys_one_at_a_time_across_projects(self):
        a = self.start("deploy", 11, project="acme/shop")
        self.started(11)
        b = self.start("deploy", 12, project="acme/billing")
        waiting = wait_claim(self.srv, "acme/billing/12/deploy", "pending")
        self.assertEqual(list(lock_names(waiting)), ["mtx/deploy/production"])
        self.go(11)
        self.go(12)
        self.assertEqual(a.finish().rc, 0, a)
        self.assertEqual(b.finish().rc, 0, b)
        first = claims_of(self.srv, "acme/shop/11/deploy")[0]
        second = claims_of(self.srv, "acme/billing/12/deploy")[0]
        self.assertEqual([first["state"], second["state"]], ["released", "released"])
        # deploy.sh got the environment and the fencing token, which grew.
        token_a = lock_names(first)["mtx/deploy/production"]
        token_b = lock_names(second)["mtx/deploy/production"]
        self.assertEqual(read(os.path.join(self.dir, "deployed.11")),
                         "production --fencing-token %d\n" % token_a)
        self.assertEqual(read(os.path.join(self.dir, "deployed.12")),
                         "production --fencing-token %d\n" % token_b)
        self.assertGreater(token_b, token_a)

    def test_newer_pipeline_stops_tests_of_same_branch(self):
        old = self.start("integration-tests", 21, ref="feature-x")
        self.started(21)
        other = self.start("integration-tests", 22, ref="feature-y")
        self.started(22)
        # The database pool is full (2 of 2): a third branch waits.
        third = self.start("integration-tests", 23, ref="feature-z")
        wait_claim(self.srv, "acme/shop/23/integration-tests", "pending")
        new = self.start("integration-tests", 24, ref="feature-x")
        canceled = wait_claim(self.srv, "acme/shop/21/integration-tests", "canceled")
        newer = claims_of(self.srv, "acme/shop/24/integration-tests")[0]
        self.assertEqual(canceled["by"], newer["id"], canceled)
        old.finish()
        self.assertEqual(old.rc, 125, old)  # the job fails: stopped by a newer pipeline
        # The new run of feature-x waits its turn behind feature-z, which
        # was first in the line for the freed database.
        self.started(23)
        for p in (22, 23, 24):
            self.go(p)
        for job in (other, third, new):
            self.assertEqual(job.finish().rc, 0, job)
        self.assertEqual(claims_of(self.srv, "acme/shop/24/integration-tests")[0]["state"],
                         "released")


if __name__ == "__main__":
    main()
