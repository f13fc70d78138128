"""An Airflow DAG whose tasks run while they hold slots of a sluice pool.

Copy this file into the DAGs folder (docs/integrations/airflow.md). The
workers need the sluice Python client (clients/python) and SLUICE_SERVER
(and SLUICE_TOKEN when the server has tokens) in their environment.

Airflow's own pools count slots inside one Airflow deployment. A sluice
semaphore is shared with everything else that claims it (other Airflow
deployments, Dagster, CI jobs, cron scripts), its waiters are ordered by
priority and age across all of them, and each holder gets a fencing token.
"""
import datetime
import os
import subprocess

import sluice
from airflow.decorators import dag, task
from airflow.exceptions import AirflowException
from airflow.operators.python import get_current_context

client = sluice.Client()  # $SLUICE_SERVER, $SLUICE_TOKEN


def holder() -> str:
    """DAG:RUN/TASK: sluice's dashboard groups a run's claims by the part before the '/'."""
    ti = get_current_context()["ti"]
    return f"{ti.dag_id}:{ti.run_id}/{ti.task_id}"


def run_holding(pool: str, argv, slots: int = 1, timeout: str = "1h") -> None:
    """Runs a command while holding slots of the sluice semaphore `pool`.

    Waits up to `timeout` for them, renews the claim while the command runs,
    stops the command if the slots are lost (an operator canceled the claim,
    or its lease ran out), and releases them at the end. The command gets
    SLUICE_FENCING_TOKEN in its environment.
    """
    proc = None

    def stop(claim: sluice.Claim) -> None:
        if proc is not None and proc.poll() is None:
            proc.terminate()

    with client.hold(semaphores={pool: slots}, holder=holder(), lease="30s",
                     timeout=timeout, on_lost=stop) as claim:
        print(f"holding {slots} of {pool}, fencing token {claim.token}")
        env = dict(os.environ, SLUICE_FENCING_TOKEN=str(claim.token))
        proc = subprocess.Popen(list(argv), env=env)
        rc = proc.wait()
        if claim.lost.is_set():
            raise AirflowException(f"lost its {pool} slot while running: {claim.reason}")
        if rc != 0:
            raise AirflowException(f"{argv[0]} exited with status {rc}")


@task
def dbt_build() -> None:
    """The warehouse takes 4 heavy jobs at once, whoever runs them: sluice sem set warehouse 4."""
    run_holding("warehouse", ["dbt", "build"])


@task
def export_reports() -> None:
    run_holding("warehouse", ["python3", "-m", "reports.export"])


@dag(schedule="@daily", start_date=datetime.datetime(2026, 1, 1), catchup=False)
def nightly_warehouse():
    dbt_build() >> export_reports()


nightly_warehouse()
