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
- slots (train_model takes 2 of gpu), and a DAG's tasks in order;
- each ecosystem's own words (E14): Dagster's pool= and dagster/concurrency_key,
  dagster/priority, mapping keys, assets; Airflow's pool, pool_slots,
  priority_weight, map_index, and airflow.sdk with the 2.x fallback;
- a server that is gone under a running op: the op fails saying so (E9).
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


SCORE = """import os, sys, time
work, model = os.environ['WORK'], sys.argv[1]
open(os.path.join(work, 'started.' + model), 'w').close()
while not os.path.exists(os.path.join(work, 'go.' + model)):
    time.sleep(0.05)
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

    def finish_after_start(self, deadline=30):
        self.start()
        return self.finish(deadline)

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

    def op(self, run_id, defn=None, alias=None, mapping_key=None):
        """One step of a run, with the context Dagster builds for it (an asset's
        context wraps its op's)."""
        import dagster
        defn = defn or self.mod.dbt_build
        op_def = defn.op if isinstance(defn, dagster.AssetsDefinition) else defn
        ctx = dagster.OpExecutionContext(run_id, op_def, Log(), alias=alias,
                                         mapping_key=mapping_key)
        if isinstance(defn, dagster.AssetsDefinition):
            ctx = dagster.AssetExecutionContext(ctx)
        step = Step(defn, ctx)
        step.ctx = ctx
        return step

    def module_writing(self, name, what):
        """A python3 -m module that writes its fencing token to WORK/<what>."""
        pkg = os.path.join(self.work, "pkg")
        path = os.path.join(pkg, *name.split(".")) + ".py"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        for d in range(len(name.split(".")) - 1):
            open(os.path.join(pkg, *name.split(".")[:d + 1], "__init__.py"), "a").close()
        with open(path, "w") as f:
            f.write("import os\nopen(os.path.join(os.environ['WORK'], %r), 'w')"
                    ".write(os.environ['SLUICE_FENCING_TOKEN'])\n" % what)
        os.environ["PYTHONPATH"] = pkg

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
        self.assertIn("lost its warehouse slot while running (canceled): canceled by an operator",
                      str(err))
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
        self.module_writing("train", "trained")
        step = self.op("r5", self.mod.train_model)
        step.start()
        self.assertIsNone(step.finish())
        claim = claims_of(self.srv, "r5/train_model")[0]
        self.assertEqual([(lk["name"], lk["slots"]) for lk in claim["locks"]], [("gpu", 2)])
        self.assertEqual(claim["priority"], 5)  # its dagster/priority tag
        self.assertEqual(read(os.path.join(self.work, "trained")), str(claim["locks"][0]["token"]))

    def test_mapped_steps_hold_each_their_own(self):
        """E14: two steps of a dynamic fan-out are two holders (Dagster's step keys)."""
        os.environ["RUN"] = "m-a"
        a = self.op("r6", mapping_key="a")
        a.start()
        self.started("m-a")
        os.environ["RUN"] = "m-b"
        b = self.op("r6", mapping_key="b")
        b.start()
        wait_claim(self.srv, "r6/dbt_build[b]", "pending")
        self.assertEqual(len(claims_of(self.srv, "r6/dbt_build[a]", "held")), 1)
        self.go("m-a")
        self.assertIsNone(a.finish())
        self.started("m-b")
        self.go("m-b")
        self.assertIsNone(b.finish())
        aliased = self.op("r7", alias="dbt_build_again")
        os.environ["RUN"] = "m-c"
        aliased.start()
        self.started("m-c")
        self.go("m-c")
        self.assertIsNone(aliased.finish())
        self.assertEqual(claims_of(self.srv, "r7/dbt_build_again")[0]["state"], "released")

    def test_concurrency_key_tag_and_asset_pool(self):
        """E14: the older tag dagster/concurrency_key names the pool; @asset(pool=) too."""
        import dagster

        @dagster.op(tags={"dagster/concurrency_key": "gpu", "dagster/priority": "-3"})
        def legacy_score(context):
            self.mod.run_holding(context, ["true"])

        self.assertIsNone(self.op("r8", legacy_score).finish_after_start())
        claim = claims_of(self.srv, "r8/legacy_score")[0]
        self.assertEqual(([lk["name"] for lk in claim["locks"]], claim["priority"]),
                         (["gpu"], -3))
        self.module_writing("reports.daily", "daily")
        self.assertIsNone(self.op("r9", self.mod.daily_report).finish_after_start())
        claim = claims_of(self.srv, "r9/daily_report")[0]
        self.assertEqual([lk["name"] for lk in claim["locks"]], ["warehouse"])
        self.assertEqual(read(os.path.join(self.work, "daily")), str(claim["locks"][0]["token"]))

        @dagster.op
        def no_pool(context):
            self.mod.run_holding(context, ["true"])

        err = self.op("r10", no_pool).finish_after_start()
        self.assertIsInstance(err, dagster.Failure)
        self.assertIn("no sluice pool: give the op pool=", str(err))

    def test_server_gone_fails_the_op_saying_so(self):
        """E9: the server stopped under a running op: the op fails with the reason,
        not 'held'. (Last of the class by name order: it restarts the server.)"""
        self.mod.LEASE = "2s"
        os.environ["RUN"] = "gone"
        a = self.op("r11")
        a.start()
        self.started("gone")
        try:
            self.srv.terminate()
            err = a.finish()
        finally:
            self.srv.start()
        self.assertIsInstance(err, sys.modules["dagster"].Failure)
        self.assertIn("lost its warehouse slot while running (unknown): the server was "
                      "unreachable for longer than the lease (2 s)", str(err))
        self.assertTrue(os.path.exists(os.path.join(self.work, "terminated.gone")))


class AirflowTest(Recipe):
    def setUp(self):
        super().setUp()
        self.mod = self.load_recipe()
        self.assertIsNotNone(sys.modules.get("airflow.sdk"), "Airflow 3's path not tried")

    def load_recipe(self):
        from airflow import decorators
        decorators.DAGS.clear()
        if sys.modules.get("airflow.sdk") is not None:
            del sys.modules["airflow.sdk"]  # so that setUp sees the recipe import it
        mod = load(recipe("airflow", "sluice_dag.py"), "sluice_dag_recipe")
        self.assertEqual([name for name, _ in decorators.DAGS], ["nightly_warehouse"])
        return mod

    def task(self, run_id, defn, *args, map_index=-1, priority_weight=None):
        """One task instance as a worker runs it: the context's "ti" and "task"
        (the operator, with the decorator's arguments)."""
        from airflow.operators.python import set_current_context
        op = defn.operator()
        ti = types.SimpleNamespace(dag_id="nightly_warehouse", run_id=run_id,
                                   task_id=op.task_id, map_index=map_index,
                                   priority_weight=priority_weight)
        return Step(defn.function, *args,
                    setup=lambda: set_current_context({"ti": ti, "task": op}))

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
        self.assertIn("lost its warehouse slot while running (canceled): canceled by an operator",
                      str(err))
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
        self.assertEqual(claim["priority"], 10)  # its priority_weight

    def test_mapped_tasks_take_pool_slots_each(self):
        """E14: pool and pool_slots name the semaphore and the slots; each mapped
        task instance is a holder of its own (map_index), its weight the priority."""
        pkg = os.path.join(self.work, "pkg")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "score.py"), "w") as f:
            f.write(SCORE)
        os.environ["PYTHONPATH"] = pkg
        run = "manual__2026-11-27T10:00:00+00:00"
        first = self.task(run, self.mod.score, "churn", map_index=0, priority_weight=3)
        first.start()
        self.started("churn")
        second = self.task(run, self.mod.score, "ltv", map_index=1, priority_weight=3)
        second.start()
        name = "nightly_warehouse:%s/score" % run
        waiting = wait_claim(self.srv, name + "[1]", "pending")
        held = claims_of(self.srv, name + "[0]", "held")[0]
        self.assertEqual([(lk["name"], lk["slots"]) for lk in held["locks"]], [("gpu", 2)])
        self.assertEqual((held["priority"], waiting["priority"]), (3, 3))
        self.go("churn")
        self.assertIsNone(first.finish())
        self.started("ltv")
        self.go("ltv")
        self.assertIsNone(second.finish())

    def test_task_without_a_pool_is_refused(self):
        from airflow.exceptions import AirflowException
        from airflow.decorators import task

        @task
        def unpooled():
            self.mod.run_holding(["true"])

        err = self.task("manual__x", unpooled).finish_after_start()
        self.assertIsInstance(err, AirflowException)
        self.assertIn("no sluice pool: give the task pool=", str(err))

    def test_airflow_2_paths_without_the_sdk(self):
        """E14: where airflow.sdk cannot be imported (Airflow 2), the 2.x paths."""
        saved = sys.modules.get("airflow.sdk")
        sys.modules["airflow.sdk"] = None  # import airflow.sdk raises ImportError
        try:
            mod = self.load_recipe()
        finally:
            sys.modules["airflow.sdk"] = saved
        from airflow.operators.python import get_current_context
        self.assertIs(mod.get_current_context, get_current_context)
        os.environ["RUN"] = "two"
        step = self.task("scheduled__2026-11-28T00:00:00+00:00", mod.dbt_build)
        step.start()
        self.started("two")
        self.go("two")
        self.assertIsNone(step.finish())


if __name__ == "__main__":
    main()
