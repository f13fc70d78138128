#!/usr/bin/env python3
"""integrations/orchestrators: the Dagster ops (integrations/dagster) and
Airflow tasks (integrations/airflow) that hold sluice pools through the
Python client, run against a real sluiced. Dagster and Airflow themselves
are stood in for (stand_ins/README.md): the recipes' code runs unchanged.

- two runs' ops on a pool of one slot: the second waits, tokens grow, both
  release; the command sees its fencing token;
- an operator's cancel while the command runs: the command is stopped and
  the op fails, saying it lost its slot;
- a failing command fails the op and releases the slot;
(The command, `dbt` here, is the test's script on PATH; each run's files are
named by RUN, set before that run's command starts.)
- slots (train_model takes 2 of gpu), and a DAG's tasks in order.
"""
import importlib.util
import os
import sys
import threading
import types

from recipe_fixture import (HERE, ServerTestCase, base_env, claims_of, main, read, recipe,
                            tmpdir, wait_claim, wait_file, write_exec)

sys.path.insert(0, os.path.join(HERE, "stand_ins"))

CONFIG = """
semaphores:
  - name: warehouse
    limit: 1
  - name: gpu
    limit: 2
"""

DBT = """#!/bin/sh
echo "$SLUICE_FENCING_TOKEN" > "$WORK/token.$RUN"
touch "$WORK/started.$RUN"
trap 'touch "$WORK/terminated.$RUN"; exit 143' TERM
for i in $(seq 600); do [ -e "$WORK/go.$RUN" ] && exit "${DBT_STATUS:-0}"; sleep 0.05; done
exit 1
"""


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Log:
    def __init__(self):
        self.lines = []

    def info(self, msg):
        self.lines.append(msg)


class Step(threading.Thread):
    """One op or task, run on a thread as a worker would run it."""

    def __init__(self, fn, *args, setup=None):
        super().__init__(daemon=True)
        self.fn, self.args, self.setup = fn, args, setup
        self.error = None

    def run(self):
        try:
            if self.setup:
                self.setup()
            self.fn(*self.args)
        except BaseException as e:  # handed to the test
            self.error = e

    def finish(self, deadline=30):
        self.join(deadline)
        assert not self.is_alive(), "the step did not finish within %d s" % deadline
        return self.error


class Recipe(ServerTestCase):
    CONFIG = CONFIG

    def setUp(self):
        self.work = tmpdir(self)
        bin_dir = os.path.join(self.work, "bin")
        os.makedirs(bin_dir)
        write_exec(os.path.join(bin_dir, "dbt"), DBT)
        env = base_env(self.srv, WORK=self.work)
        env["PATH"] = bin_dir + ":" + env["PATH"]
        self.saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        self.addCleanup(self.restore)

    def restore(self):
        os.environ.clear()
        os.environ.update(self.saved)

    def go(self, run):
        open(os.path.join(self.work, "go." + run), "w").close()

    def started(self, run):
        wait_file(os.path.join(self.work, "started." + run))

    def cancel(self, holder):
        claim = wait_claim(self.srv, holder, "held")
        r = self.srv.post("/v1/claims/%s/cancel" % claim["id"])
        self.assertEqual(r.status, 200, r)


class DagsterTest(Recipe):
    def setUp(self):
        super().setUp()
        self.mod = load(recipe("dagster", "sluice_pools.py"), "sluice_pools_recipe")
        self.assertTrue(self.mod.nightly.is_job_definition)

    def context(self, run_id, op_name):
        return types.SimpleNamespace(run_id=run_id, op_def=types.SimpleNamespace(name=op_name),
                                     log=Log())

    def op(self, run_id, fn=None):
        fn = fn or self.mod.dbt_build
        ctx = self.context(run_id, fn.__name__)
        step = Step(fn, ctx)
        step.ctx = ctx
        return step

    def test_pool_of_one_second_run_waits(self):
        os.environ["RUN"] = "r1"
        a = self.op("r1")
        a.start()
        self.started("r1")
        os.environ["RUN"] = "r2"
        b = self.op("r2")
        b.start()
        wait_claim(self.srv, "r2/dbt_build", "pending")
        self.assertFalse(os.path.exists(os.path.join(self.work, "started.r2")))
        self.go("r1")
        self.assertIsNone(a.finish())
        self.started("r2")
        self.go("r2")
        self.assertIsNone(b.finish())
        first = claims_of(self.srv, "r1/dbt_build")[0]
        second = claims_of(self.srv, "r2/dbt_build")[0]
        self.assertEqual((first["state"], second["state"]), ("released", "released"))
        t1 = int(read(os.path.join(self.work, "token.r1")))
        t2 = int(read(os.path.join(self.work, "token.r2")))
        self.assertEqual(t1, first["locks"][0]["token"])
        self.assertLess(t1, t2)
        self.assertIn("holding 1 of warehouse, fencing token %d" % t1, a.ctx.log.lines)

    def test_operator_cancel_stops_the_command(self):
        os.environ["RUN"] = "r3"
        a = self.op("r3")
        a.start()
        self.started("r3")
        self.cancel("r3/dbt_build")
        err = a.finish()
        self.assertIsInstance(err, sys.modules["dagster"].Failure)
        self.assertIn("lost its warehouse slot", str(err))
        self.assertTrue(os.path.exists(os.path.join(self.work, "terminated.r3")))
        self.assertEqual(claims_of(self.srv, "r3/dbt_build")[0]["state"], "canceled")

    def test_failing_command_fails_the_op(self):
        os.environ.update(RUN="r4", DBT_STATUS="3")
        a = self.op("r4")
        a.start()
        self.started("r4")
        self.go("r4")
        err = a.finish()
        self.assertIn("dbt exited with status 3", str(err))
        self.assertEqual(claims_of(self.srv, "r4/dbt_build")[0]["state"], "released")

    def test_train_model_takes_two_gpu_slots(self):
        pkg = os.path.join(self.work, "pkg")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "train.py"), "w") as f:
            f.write("import os\nopen(os.path.join(os.environ['WORK'], 'trained'), 'w')"
                    ".write(os.environ['SLUICE_FENCING_TOKEN'])\n")
        os.environ["PYTHONPATH"] = pkg
        step = self.op("r5", self.mod.train_model)
        step.start()
        self.assertIsNone(step.finish())
        claim = claims_of(self.srv, "r5/train_model")[0]
        self.assertEqual([(lk["name"], lk["slots"]) for lk in claim["locks"]], [("gpu", 2)])
        self.assertEqual(read(os.path.join(self.work, "trained")), str(claim["locks"][0]["token"]))


class AirflowTest(Recipe):
    def setUp(self):
        super().setUp()
        from airflow import decorators
        decorators.DAGS.clear()
        self.mod = load(recipe("airflow", "sluice_dag.py"), "sluice_dag_recipe")
        self.assertEqual([name for name, _ in decorators.DAGS], ["nightly_warehouse"])

    def task(self, run_id, fn):
        from airflow.operators.python import set_current_context
        ti = types.SimpleNamespace(dag_id="nightly_warehouse", run_id=run_id,
                                   task_id=fn.__name__)
        return Step(fn, setup=lambda: set_current_context({"ti": ti}))

    def test_tasks_share_the_pool_across_runs(self):
        run1, run2 = "scheduled__2026-11-25T00:00:00+00:00", "manual__2026-11-26T10:00:00+00:00"
        os.environ["RUN"] = "a"
        a = self.task(run1, self.mod.dbt_build)
        a.start()
        self.started("a")
        os.environ["RUN"] = "b"
        b = self.task(run2, self.mod.dbt_build)
        b.start()
        wait_claim(self.srv, "nightly_warehouse:%s/dbt_build" % run2, "pending")
        self.go("a")
        self.assertIsNone(a.finish())
        self.started("b")
        self.go("b")
        self.assertIsNone(b.finish())
        for run in (run1, run2):
            claim = claims_of(self.srv, "nightly_warehouse:%s/dbt_build" % run)[0]
            self.assertEqual(claim["state"], "released")

    def test_cancel_fails_the_task_and_export_runs(self):
        from airflow.exceptions import AirflowException
        run = "scheduled__2026-11-26T00:00:00+00:00"
        os.environ["RUN"] = "c"
        a = self.task(run, self.mod.dbt_build)
        a.start()
        self.started("c")
        self.cancel("nightly_warehouse:%s/dbt_build" % run)
        err = a.finish()
        self.assertIsInstance(err, AirflowException)
        self.assertIn("lost its warehouse slot", str(err))
        # The export task: its module runs with the slot held.
        pkg = os.path.join(self.work, "pkg", "reports")
        os.makedirs(pkg)
        open(os.path.join(pkg, "__init__.py"), "w").close()
        with open(os.path.join(pkg, "export.py"), "w") as f:
            f.write("import os\nopen(os.path.join(os.environ['WORK'], 'exported'), 'w')"
                    ".write(os.environ['SLUICE_FENCING_TOKEN'])\n")
        os.environ["PYTHONPATH"] = os.path.dirname(pkg)
        e = self.task(run, self.mod.export_reports)
        e.start()
        self.assertIsNone(e.finish())
        claim = claims_of(self.srv, "nightly_warehouse:%s/export_reports" % run)[0]
        self.assertEqual(read(os.path.join(self.work, "exported")),
                         str(claim["locks"][0]["token"]))


if __name__ == "__main__":
    main()
