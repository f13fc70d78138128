#!/usr/bin/env python3
"""integrations/argo: the Argo Workflows recipe (integrations/argo) against a
real sluiced.

- `sluice import argo --apply semaphores.yaml` configures Argo's ConfigMap
  semaphores under Argo's own names and limits;
- `sluice argo flags argo-synchronization.yaml --template train` prints the
  flags that workflow-template.yaml's train step runs `sluice run` with, and
  `sluice argo flags argo-synchronization.yaml` (the workflow-level block)
  warns and prints the commands of its workflow-lock step and exit handler;
- the containers (command, args, env) run as Argo would run the pods of two
  workflows, with `{{...}}` filled in as Argo fills them: one workflow at a
  time, as the workflow-level `workflow: "1"` semaphore allows (the second
  waits in its first step until the first one's exit handler), each train
  pod holding a gpu slot, holders WORKFLOW-UID/POD, each command given its
  fencing token.
"""
import os
import re
import shlex
import subprocess

import yaml

from recipe_fixture import (Job, ServerTestCase, base_env, claims_of, main, read, recipe,
                            sluice_bin, tmpdir, wait_claim, wait_file, wait_until)

EXPR = re.compile(r"\{\{\s*([a-z.A-Z0-9_-]+)\s*\}\}")
TRAIN = """import os, sys, time
model = sys.argv[sys.argv.index("--model") + 1]
token = sys.argv[sys.argv.index("--fencing-token") + 1]
work = os.environ["WORK"]
# written whole, then renamed: the test waits for the name and reads the token
with open(os.path.join(work, "trained." + model + ".tmp"), "w") as f:
    f.write(token)
os.replace(os.path.join(work, "trained." + model + ".tmp"), os.path.join(work, "trained." + model))
for _ in range(600):
    if os.path.exists(os.path.join(work, "go." + model)):
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
"""


def load(name):
    with open(recipe("argo", name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def template(doc, name):
    return next(t for t in doc["spec"]["templates"] if t["name"] == name)


def fill(text, values):
    return EXPR.sub(lambda m: values[m.group(1)], text)


class ArgoTest(ServerTestCase):
    def sluice(self, *args):
        return subprocess.run([sluice_bin()] + list(args), env=base_env(self.srv),
                              capture_output=True, text=True, timeout=30)

    def pod(self, name, values, d):
        """A pod of the template `name` of workflow-template.yaml: its
        container's command, args and env, with {{...}} filled in."""
        container = template(load("workflow-template.yaml"), name)["container"]
        env = base_env(self.srv, WORK=d, PYTHONPATH=d)
        for e in container.get("env", []):
            env[e["name"]] = fill(e["value"], values)
        env["SLUICE_SERVER"] = "http://127.0.0.1:%d" % self.srv.port
        argv = [fill(a, values) for a in container["command"] + container.get("args", [])]
        return Job(self, argv, env, d)

    def workflow_sem(self):
        return self.srv.get("/v1/semaphores/argo/ConfigMap/my-config/workflow").json

    def test_import_then_flags_then_pods(self):
        r = self.sluice("import", "argo", "--apply", recipe("argo", "semaphores.yaml"))
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stderr, "", r)
        for key, limit in (("workflow", 1), ("template", 2), ("gpu", 4)):
            sem = self.srv.get("/v1/semaphores/argo/ConfigMap/my-config/" + key).json
            self.assertEqual((sem["limit"], sem["strategy"]), (limit, "strict"), sem)

        # The template-level block: the flags the train step runs with.
        r = self.sluice("argo", "flags", recipe("argo", "argo-synchronization.yaml"),
                        "--template", "train")
        self.assertEqual(r.returncode, 0, r)
        flags = shlex.split(r.stdout)
        after = load("workflow-template.yaml")
        command = template(after, "train")["container"]["command"]
        self.assertEqual(command[:2], ["sluice", "run"])
        at = command.index(flags[0])
        self.assertEqual(command[at:at + len(flags)], flags)

        # The workflow-level block: a loud warning, whose commands are the
        # workflow-lock step's and the exit handler's.
        r = self.sluice("argo", "flags", recipe("argo", "argo-synchronization.yaml"))
        self.assertEqual((r.returncode, r.stdout),
                         (0, "--semaphore argo/ConfigMap/my-config/workflow\n"), r)
        self.assertIn("is a WORKFLOW-LEVEL lock", r.stderr)
        steps = dict(line.strip().split(":  ", 1) for line in r.stderr.splitlines()
                     if line.startswith("  "))
        self.assertEqual(template(after, "workflow-lock")["container"]["command"],
                         shlex.split(steps["first step"]))
        self.assertEqual(template(after, "release-workflow-lock")["container"]["command"],
                         shlex.split(steps["exit handler"]))
        self.assertEqual(after["spec"]["onExit"], "release-workflow-lock")
        main_steps = template(after, "main")["steps"]
        self.assertEqual(main_steps[0][0]["template"], "workflow-lock")

        # Two workflows, as Argo's controller would run their pods (it is
        # not run: its part is the pod spec with its {{...}} filled in).
        d = tmpdir(self)
        with open(os.path.join(d, "train.py"), "w") as f:
            f.write(TRAIN)
        a = {"workflow.uid": "uid-a"}
        b = {"workflow.uid": "uid-b"}
        # a's first step takes the workflow lock and ends; b's waits for it
        lock_a = self.pod("workflow-lock", a, d).finish()
        self.assertEqual(lock_a.rc, 0, lock_a)
        wait_claim(self.srv, "uid-a/workflow", "held")
        lock_b = self.pod("workflow-lock", b, d)
        wait_claim(self.srv, "uid-b/workflow", "pending")

        # a's train pods run, each with a gpu slot and its fencing token,
        # while b still waits: one workflow at a time, as in Argo
        pods = {}
        for n, model in enumerate(main_steps[1][0]["withItems"]):
            values = dict(a, **{"pod.name": "train-models-a-train-%d" % n,
                                "inputs.parameters.model": model})
            pods[model] = (self.pod("train", values, d), values["pod.name"])
        for model, (_, pod) in pods.items():
            wait_file(os.path.join(d, "trained." + model))
            held = claims_of(self.srv, "uid-a/" + pod, "held")[0]
            self.assertEqual([lk["name"] for lk in held["locks"]],
                             ["argo/ConfigMap/my-config/gpu"])
            self.assertEqual(read(os.path.join(d, "trained." + model)),
                             str(held["locks"][0]["token"]))
        self.assertEqual(claims_of(self.srv, "uid-b/workflow")[0]["state"], "pending")
        self.assertEqual(self.workflow_sem()["used"], 1)
        for model, (job, _) in pods.items():
            open(os.path.join(d, "go." + model), "w").close()
            self.assertEqual(job.finish().rc, 0, job)
        self.assertEqual(claims_of(self.srv, "uid-b/workflow")[0]["state"], "pending")

        # a's exit handler ends a's claims: b's first step gets the lock
        done = self.pod("release-workflow-lock", a, d).finish()
        self.assertEqual(done.rc, 0, done)
        self.assertTrue(done.out.startswith("released 1, withdrawn 0, canceled 0"), done)
        self.assertEqual(lock_b.finish().rc, 0, lock_b)
        wait_claim(self.srv, "uid-b/workflow", "held")
        done = self.pod("release-workflow-lock", b, d).finish()
        self.assertEqual(done.rc, 0, done)
        wait_until(lambda: self.workflow_sem()["used"] == 0, 10, what="workflow lock free")


if __name__ == "__main__":
    main()
