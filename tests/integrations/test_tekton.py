#!/usr/bin/env python3
"""integrations/tekton: the sluice-run Task (integrations/tekton/task.yaml)
as Tekton runs its step, and the PipelineRun of TEP-0120's example
(integrations/tekton/pipelinerun.yaml), against a real sluiced.

Tekton's part, done here as Tekton does it: `$(params.NAME)` (a TaskRun's
value, else the default) and `$(context.taskRun.name|namespace)` replaced
in the step's env values; a PipelineRun's params replaced in its pipeline
tasks' params first; the step's script written to a file and executed
(its #!/bin/sh line decides the shell); env values from a Secret marked
optional left out when there is none.
"""
import os
import re
import unittest

import yaml

from recipe_fixture import (Job, ServerTestCase, base_env, claims_of, lock_names, main,
                            recipe, tmpdir, wait_claim, wait_file, write_exec)

CONFIG = """
semaphores:
  - name: ci-runs/*      # the recipe says 5 per repository; 2 here keep the test small
    limit: 2
"""

REF = re.compile(r"\$\((params|context\.taskRun)\.([A-Za-z0-9_-]+)\)")
WAIT_GO = 'for i in $(seq 600); do [ -e "go.$RUN" ] && exit 0; sleep 0.05; done; exit 1'


def load(name):
    with open(recipe("tekton", name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def resolve(text, params, context):
    def value(m):
        scope, key = m.groups()
        return params[key] if scope == "params" else context[key]
    return REF.sub(value, text)


def pipeline_task_params(run):
    """The params the PipelineRun's one task passes to the Task, resolved."""
    given = {p["name"]: p["value"] for p in run["spec"]["params"]}
    (task,) = run["spec"]["pipelineSpec"]["tasks"]
    assert task["taskRef"]["name"] == "sluice-run"
    return {p["name"]: resolve(p["value"], given, {}) for p in task["params"]}


class TektonTest(ServerTestCase):
    CONFIG = CONFIG

    def setUp(self):
        self.task = load("task.yaml")
        self.dir = tmpdir(self)

    def step(self, given, run_name, namespace="ci"):
        """Starts the Task's step for a TaskRun named run_name."""
        params = {}
        for p in self.task["spec"]["params"]:
            if p["name"] in given:
                params[p["name"]] = given[p["name"]]
            elif "default" in p:
                params[p["name"]] = p["default"]
            else:
                raise AssertionError("param %s has no value" % p["name"])
        context = {"name": run_name, "namespace": namespace}
        (step,) = self.task["spec"]["steps"]
        env = base_env(None, RUN=run_name)
        for e in step["env"]:
            if "value" in e:
                env[e["name"]] = resolve(e["value"], params, context)
            else:
                self.assertTrue(e["valueFrom"]["secretKeyRef"].get("optional"), e)
        self.assertEqual(env["SLUICE_SERVER"], params["server"])
        script = write_exec(os.path.join(self.dir, "step-%s.sh" % run_name), step["script"])
        return Job(self, [script], env, self.dir)

    def server(self):
        return "http://127.0.0.1:%d" % self.srv.port

    def started(self, run):
        wait_file(os.path.join(self.dir, "started." + run))

    def go(self, run):
        open(os.path.join(self.dir, "go." + run), "w").close()

    def pr_run(self, pr, run):
        """The PipelineRun of pull request pr, named run."""
        doc = load("pipelinerun.yaml")
        for p in doc["spec"]["params"]:
            if p["name"] == "pr":
                p["value"] = str(pr)
        given = pipeline_task_params(doc)
        given["server"] = self.server()
        given["script"] = "touch started.$RUN; " + WAIT_GO
        return self.step(given, run)

    def test_tep_0120_last_run_per_pr_and_limit_per_repo(self):
        a = self.pr_run(1, "pr1-a")
        self.started("pr1-a")
        b = self.pr_run(2, "pr2-a")
        self.started("pr2-a")
        # Two runs of acme/shop hold its ci-runs slots: a third PR waits.
        c = self.pr_run(3, "pr3-a")
        waiting = wait_claim(self.srv, "ci/pr3-a", "pending")
        self.assertEqual(set(lock_names(waiting)), {"sem/ci-runs/acme/shop", "mtx/group/acme/shop/pr-3"})
        why = self.srv.get("/v1/claims/%s/why" % waiting["id"]).json
        self.assertEqual(why["reasons"][0]["rule"], "at_limit", why)
        # A new push to PR 1: its old run is stopped (the TaskRun fails), and
        # the freed slot goes to PR 3, first in line; PR 1's new run waits.
        a2 = self.pr_run(1, "pr1-b")
        wait_claim(self.srv, "ci/pr1-a", "canceled")
        self.assertEqual(a.finish().rc, 125, a)
        self.started("pr3-a")
        wait_claim(self.srv, "ci/pr1-b", "pending")
        for run in ("pr2-a", "pr3-a", "pr1-b"):
            self.go(run)
        for job in (b, c, a2):
            self.assertEqual(job.finish().rc, 0, job)

    def test_mutex_and_script_failure(self):
        ok = self.step({"image": "x", "server": self.server(), "mutex": "deploy/staging",
                        "script": 'echo "$SLUICE_FENCING_TOKENS" > tokens.$RUN'}, "deploy-1")
        self.assertEqual(ok.finish().rc, 0, ok)
        with open(os.path.join(self.dir, "tokens.deploy-1")) as f:
            self.assertTrue(f.read().startswith("mtx/deploy/staging="))
        bad = self.step({"image": "x", "server": self.server(), "mutex": "deploy/staging",
                         "script": "false; touch after"}, "deploy-2")
        self.assertEqual(bad.finish().rc, 1, bad)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "after")))
        self.assertEqual(claims_of(self.srv, "ci/deploy-2")[0]["state"], "released")
        # A parameter's value is data, never a command.
        inj = self.step({"image": "x", "server": self.server(), "mutex": "m; touch pwned",
                         "script": "true"}, "deploy-3")
        self.assertEqual(inj.finish().rc, 121, inj)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "pwned")))


if __name__ == "__main__":
    main()
