"""An Airflow DAG whose tasks run while they hold slots of a sluice pool.

Copy this file into the DAGs folder (docs/integrations/airflow.md). The
workers need the sluice Python client (clients/python) and SLUICE_SERVER
(and SLUICE_TOKEN when the server has tokens) in their environment.

Airflow's own pools count slots inside one Airflow deployment. A sluice
semaphore is shared with everything else that claims it (other Airflow
deployments, Dagster, CI jobs, cron scripts), its waiters are ordered by
priority and age across all of them, and each holder gets a fencing token.

A task says what it needs the way Airflow has it: `pool` names the sluice
semaphore too, `pool_slots` is how many of its slots, and the task's
priority weight is the claim's priority (higher first, as in Airflow). The
Airflow pool of that name still exists in Airflow (Airflow refuses a task
whose pool does not): with the same limit, a task also waits in Airflow's
scheduler, not on a worker, for the slots its own deployment holds.
Works with Airflow 3 (airflow.sdk) and Airflow 2.
"""
import datetime
import os
import subprocess
from typing import Optional, Sequence

import sluice
from airflow.exceptions import AirflowException

try:  # Airflow 3: the Task SDK
    from airflow.sdk import dag, get_current_context, task
except ImportError:  # Airflow 2
    from airflow.decorators import dag, task
    from airflow.operators.python import get_current_context

client = sluice.Client()  # $SLUICE_SERVER, $SLUICE_TOKEN

#: How long a slot outlives a worker that died; the client renews it every third of it.
LEASE = "30s"
DEFAULT_POOL = "default_pool"  # Airflow's pool for a task that names none


def holder(ti) -> str:
    """DAG:RUN/TASK, and [MAP_INDEX] for one task of a mapped (expand) task.
    sluice's dashboard groups a run's claims by the part before the '/'."""
    name = f"{ti.dag_id}:{ti.run_id}/{ti.task_id}"
    index = getattr(ti, "map_index", None)
    return name if index is None or index < 0 else f"{name}[{index}]"


def task_priority(ti, op) -> Optional[int]:
    """The task's effective priority weight (its weight rule applied), as Airflow
    orders the queue; the operator's own when the task instance does not carry it."""
    for value in (getattr(ti, "priority_weight", None),
                  getattr(op, "priority_weight_total", None),
                  getattr(op, "priority_weight", None)):
        if value is not None:
            return int(value)
    return None


def run_holding(argv: Sequence[str], pool: Optional[str] = None, slots: Optional[int] = None,
                timeout: str = "1h") -> None:
    """Runs a command while holding slots of the sluice semaphore `pool`
    (default: the task's Airflow pool, with its pool_slots).

    Waits up to `timeout` for them, renews the claim while the command runs,
    stops the command if the slots are lost (an operator canceled the claim,
    or its lease ran out), and releases them at the end. The command gets
    SLUICE_FENCING_TOKEN in its environment.
    """
    context = get_current_context()
    ti, op = context["ti"], context["task"]
    pool = pool or (op.pool if op.pool != DEFAULT_POOL else None)
    if not pool:
        raise AirflowException("no sluice pool: give the task pool=... (an Airflow pool of "
                               "that name), or pass pool= to run_holding")
    slots = slots or getattr(op, "pool_slots", 1) or 1
    proc = None

    def stop(claim: sluice.Claim) -> None:
        if proc is not None and proc.poll() is None:
            proc.terminate()

    with client.hold(semaphores={pool: slots}, holder=holder(ti), lease=LEASE,
                     priority=task_priority(ti, op), timeout=timeout, on_lost=stop) as claim:
        print(f"holding {slots} of {pool}, fencing token {claim.token}")
        env = dict(os.environ, SLUICE_FENCING_TOKEN=str(claim.token))
        proc = subprocess.Popen(list(argv), env=env)
        rc = proc.wait()
        if claim.lost.is_set():
            # the claim says how: canceled, expired, or unknown (the server out of reach)
            raise AirflowException(
                f"lost its {pool} slot while running ({claim.state}): {claim.reason}")
        if rc != 0:
            raise AirflowException(f"{argv[0]} exited with status {rc}")


@task(pool="warehouse")
def dbt_build() -> None:
    """The warehouse takes 4 heavy jobs at once, whoever runs them: sluice sem set warehouse 4."""
    run_holding(["dbt", "build"])


@task(pool="warehouse", priority_weight=10)
def export_reports() -> None:
    run_holding(["python3", "-m", "reports.export"])


@task(pool="gpu", pool_slots=2)
def score(model: str) -> None:
    """Mapped: one task per model, each its own holder (…/score[0], …/score[1])."""
    run_holding(["python3", "-m", "score", model])


@dag(schedule="@daily", start_date=datetime.datetime(2026, 1, 1), catchup=False)
def nightly_warehouse():
    dbt_build() >> export_reports()
    score.expand(model=["churn", "ltv"])


nightly_warehouse()
