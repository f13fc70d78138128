#!/usr/bin/env python3
"""integrations/argo: the Argo Workflows recipe (integrations/argo) against a
real sluiced.

- `sluice import argo --apply semaphores.yaml` configures Argo's ConfigMap
  semaphores under Argo's own names, limits and strategies;
- `sluice argo flags argo-synchronization.yaml --template train` prints the
  flags that workflow-template.yaml's train step runs `sluice run` with;
- the train step's container (command, args, env) runs as Argo would run
  its pods, with `{{...}}` filled in as Argo fills them: the pods of two
  tenants share the rebalanced gpu semaphore fairly, each holder named
  WORKFLOW/POD, each command given its fencing token.
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
with open(os.path.join(work, "trained." + model), "w") as f:
    f.write(token)
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

    def test_import_then_flags_then_pods(self):
        r = self.sluice("import", "argo", "--apply", recipe("argo", "semaphores.yaml"))
        self.assertEqual(r.returncode, 0, r)
        self.assertIn("configured argo/ConfigMap/my-config/gpu: limit 4, rebalanced", r.stdout)
        for key, limit, strategy in (("workflow", 1, "strict"), ("template", 2, "strict"),
                                     ("gpu", 4, "rebalanced")):
            sem = self.srv.get("/v1/semaphores/argo/ConfigMap/my-config/" + key).json
            self.assertEqual((sem["limit"], sem["strategy"]), (limit, strategy), sem)

        # The flags Argo's synchronization block stands for are the ones the
        # sluice template runs with.
        r = self.sluice("argo", "flags", recipe("argo", "argo-synchronization.yaml"),
                        "--template", "train")
        self.assertEqual(r.returncode, 0, r)
        flags = shlex.split(r.stdout)
        step = template(load("workflow-template.yaml"), "train")
        command = step["container"]["command"]
        self.assertEqual(command[:2], ["sluice", "run"])
        at = command.index(flags[0])
        self.assertEqual(command[at:at + len(flags)], flags)

        # Two workflows' pods: acme's three models, then beta's one. gpu has
        # 4 slots shared fairly: acme's pods take 3, beta's gets the 4th, a
        # second beta pod waits for a slot. (Argo's controller is not run:
        # its part is the pod spec with its {{...}} filled in.)
        d = tmpdir(self)
        with open(os.path.join(d, "train.py"), "w") as f:
            f.write(TRAIN)
        main_steps = template(load("workflow-template.yaml"), "main")["steps"][0][0]
        pods = [("train-acme-1", "acme", m) for m in main_steps["withItems"]]
        pods += [("train-beta-1", "beta", "xl"), ("train-beta-1", "beta", "xxl")]
        jobs = {}
        for n, (workflow, tenant, model) in enumerate(pods):
            values = {"workflow.name": workflow, "workflow.parameters.tenant": tenant,
                      "pod.name": "%s-train-%d" % (workflow, n), "inputs.parameters.model": model}
            env = base_env(self.srv, WORK=d, PYTHONPATH=d)
            for e in step["container"]["env"]:
                env[e["name"]] = fill(e["value"], values)
            env["SLUICE_SERVER"] = "http://127.0.0.1:%d" % self.srv.port
            argv = [fill(a, values) for a in command + step["container"]["args"]]
            jobs[model] = (Job(self, argv, env, d), values["pod.name"], workflow)
            if model != "xxl":
                wait_file(os.path.join(d, "trained." + model))
        waiting = wait_claim(self.srv, "train-beta-1/train-beta-1-train-4", "pending")
        self.assertEqual(waiting["rebalance_key"], "beta")
        for model in ("small", "medium", "large", "xl"):
            pod, wf = jobs[model][1], jobs[model][2]
            held = claims_of(self.srv, "%s/%s" % (wf, pod))[0]
            self.assertEqual(read(os.path.join(d, "trained." + model)),
                             str(held["locks"][0]["token"]))
        # acme's first pod ends: the free slot goes to beta's waiting pod,
        # whose tenant is under its share (2 of 4) - not to anyone of acme's.
        open(os.path.join(d, "go.small"), "w").close()
        self.assertEqual(jobs["small"][0].finish().rc, 0)
        wait_file(os.path.join(d, "trained.xxl"))
        for model in ("medium", "large", "xl", "xxl"):
            open(os.path.join(d, "go." + model), "w").close()
        for model in ("medium", "large", "xl", "xxl"):
            job = jobs[model][0].finish()
            self.assertEqual(job.rc, 0, job)
        wait_until(lambda: self.srv.get("/v1/semaphores/argo/ConfigMap/my-config/gpu").json[
            "used"] == 0, 10, what="gpu free")


if __name__ == "__main__":
    main()
