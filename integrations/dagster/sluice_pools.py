"""Dagster ops that run while they hold slots of a sluice pool.

Copy this module into a Dagster code location (docs/integrations/dagster.md).
It needs the sluice Python client (clients/python) and SLUICE_SERVER (and
SLUICE_TOKEN when the server has tokens) in the environment of the run
workers.

Dagster's own concurrency pools count slots inside one Dagster instance. A
sluice semaphore is shared with everything else that claims it: other
Dagster instances, Airflow, CI jobs, cron scripts. Each holder also gets a
fencing token to pass to what it writes to, so that a step that lost its
slot (its worker froze past the lease) cannot overwrite a newer one's work.
"""
import os
import subprocess
from contextlib import contextmanager
from typing import Iterator, Sequence

import sluice
from dagster import Failure, OpExecutionContext, job, op

client = sluice.Client()  # $SLUICE_SERVER, $SLUICE_TOKEN


def holder(context: OpExecutionContext) -> str:
    """RUN/STEP: sluice's dashboard groups a run's claims by the part before the '/'."""
    return f"{context.run_id}/{context.op_def.name}"


@contextmanager
def pool_slot(context: OpExecutionContext, pool: str, slots: int = 1,
              timeout: str = "1h", on_lost=None) -> Iterator[sluice.Claim]:
    """Holds `slots` slots of the sluice semaphore `pool` while the block runs.

    Waits up to `timeout` for them (the op fails with sluice.Timeout after
    that), keeps the claim's lease renewed on a thread, and releases the
    slots when the block ends, however it ends. If the claim is lost meanwhile
    (an operator canceled it, or the lease ran out), claim.lost is set and
    on_lost(claim) is called.
    """
    with client.hold(semaphores={pool: slots}, holder=holder(context), lease="30s",
                     timeout=timeout, on_lost=on_lost) as claim:
        context.log.info(f"holding {slots} of {pool}, fencing token {claim.token}")
        yield claim


def run_holding(context: OpExecutionContext, pool: str, argv: Sequence[str],
                slots: int = 1) -> None:
    """Runs a command while holding slots of `pool`; stops it if the slots are lost.

    The command gets SLUICE_FENCING_TOKEN in its environment. The op fails
    when the command fails, and when the slots were lost while it ran.
    """
    proc = None

    def stop(claim: sluice.Claim) -> None:
        if proc is not None and proc.poll() is None:
            proc.terminate()

    with pool_slot(context, pool, slots, on_lost=stop) as claim:
        env = dict(os.environ, SLUICE_FENCING_TOKEN=str(claim.token))
        proc = subprocess.Popen(list(argv), env=env)
        rc = proc.wait()
        if claim.lost.is_set():
            raise Failure(f"lost its {pool} slot while running: {claim.reason}")
        if rc != 0:
            raise Failure(f"{argv[0]} exited with status {rc}")


@op
def dbt_build(context: OpExecutionContext) -> None:
    """The warehouse takes 4 heavy jobs at once, whoever runs them: sluice sem set warehouse 4."""
    run_holding(context, "warehouse", ["dbt", "build"])


@op
def train_model(context: OpExecutionContext) -> None:
    """Two of the pool's slots: a training run weighs twice a scoring run."""
    run_holding(context, "gpu", ["python3", "-m", "train"], slots=2)


@job
def nightly() -> None:
    dbt_build()
    train_model()
