"""Dagster ops and assets that run while they hold slots of a sluice pool.

Copy this module into a Dagster code location (docs/integrations/dagster.md).
It needs the sluice Python client (clients/python) and SLUICE_SERVER (and
SLUICE_TOKEN when the server has tokens) in the environment of the run
workers.

Dagster's own concurrency pools count slots inside one Dagster instance. A
sluice semaphore is shared with everything else that claims it: other
Dagster instances, Airflow, CI jobs, cron scripts. Each holder also gets a
fencing token to pass to what it writes to, so that a step that lost its
slot (its worker froze past the lease) cannot overwrite a newer one's work.

An op names its pool the way Dagster has it: `@op(pool="warehouse")` or
`@asset(pool="warehouse")` (Dagster 1.10 and later), or the older tag
`dagster/concurrency_key`; the tag `dagster/priority` orders the waiters.
The sluice semaphore of that name is claimed, and Dagster's own pool (if
the instance gives it a limit) still keeps the step from launching before
a slot of this instance is free.
"""
import os
import subprocess
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence

import sluice
from dagster import AssetExecutionContext, Failure, OpExecutionContext, asset, job, op

client = sluice.Client()  # $SLUICE_SERVER, $SLUICE_TOKEN

#: How long a slot outlives a worker that died; the client renews it every third of it.
LEASE = "30s"
CONCURRENCY_KEY_TAG = "dagster/concurrency_key"  # the pool before Dagster 1.10
PRIORITY_TAG = "dagster/priority"


def _op_context(context) -> OpExecutionContext:
    """An asset's context hands out its op's (the step's) context."""
    return getattr(context, "op_execution_context", context)


def holder(context) -> str:
    """RUN/STEP, STEP as Dagster keys it: the node's name (an aliased op's alias,
    inside graphs its path), then [MAPPING_KEY] for a step of a dynamic fan-out.
    sluice's dashboard groups a run's claims by the part before the '/'."""
    ctx = _op_context(context)
    step = str(ctx.op_handle)
    key = ctx.get_mapping_key()
    return f"{ctx.run_id}/{step}[{key}]" if key else f"{ctx.run_id}/{step}"


def dagster_pool(context) -> Optional[str]:
    """The op's Dagster pool: pool= (Dagster 1.10+), else its dagster/concurrency_key tag."""
    op_def = _op_context(context).op_def
    return getattr(op_def, "pool", None) or op_def.tags.get(CONCURRENCY_KEY_TAG)


def dagster_priority(context) -> Optional[int]:
    """The op's dagster/priority tag (higher goes first, as in sluice)."""
    value = _op_context(context).op_def.tags.get(PRIORITY_TAG)
    return None if value is None else int(value)


def _pool(context, pool: Optional[str]) -> str:
    pool = pool or dagster_pool(context)
    if not pool:
        raise Failure("no sluice pool: give the op pool=... (or the tag "
                      f"{CONCURRENCY_KEY_TAG}), or pass pool= here")
    return pool


@contextmanager
def pool_slot(context, pool: Optional[str] = None, slots: int = 1, timeout: str = "1h",
              on_lost: Optional[Callable[[sluice.Claim], None]] = None
              ) -> Iterator[sluice.Claim]:
    """Holds `slots` slots of the sluice semaphore `pool` (default: the op's
    own Dagster pool) while the block runs.

    Waits up to `timeout` for them (the op fails with sluice.Timeout after
    that), keeps the claim's lease renewed on a thread, and releases the
    slots when the block ends, however it ends. If the claim is lost meanwhile
    (an operator canceled it, or the lease ran out), claim.lost is set and
    on_lost(claim) is called.
    """
    pool = _pool(context, pool)
    with client.hold(semaphores={pool: slots}, holder=holder(context), lease=LEASE,
                     priority=dagster_priority(context), timeout=timeout,
                     on_lost=on_lost) as claim:
        context.log.info(f"holding {slots} of {pool}, fencing token {claim.token}")
        yield claim


def run_holding(context, argv: Sequence[str], pool: Optional[str] = None,
                slots: int = 1) -> None:
    """Runs a command while holding slots of `pool` (default: the op's Dagster
    pool); stops it if the slots are lost.

    The command gets SLUICE_FENCING_TOKEN in its environment. The op fails
    when the command fails, and when the slots were lost while it ran.
    """
    pool = _pool(context, pool)
    proc = None

    def stop(claim: sluice.Claim) -> None:
        if proc is not None and proc.poll() is None:
            proc.terminate()

    with pool_slot(context, pool, slots, on_lost=stop) as claim:
        env = dict(os.environ, SLUICE_FENCING_TOKEN=str(claim.token))
        proc = subprocess.Popen(list(argv), env=env)
        rc = proc.wait()
        if claim.lost.is_set():
            # the claim says how: canceled, expired, or unknown (the server out of reach)
            raise Failure(f"lost its {pool} slot while running ({claim.state}): {claim.reason}")
        if rc != 0:
            raise Failure(f"{argv[0]} exited with status {rc}")


@op(pool="warehouse")
def dbt_build(context: OpExecutionContext) -> None:
    """The warehouse takes 4 heavy jobs at once, whoever runs them: sluice sem set warehouse 4."""
    run_holding(context, ["dbt", "build"])


@op(pool="gpu", tags={PRIORITY_TAG: "5"})
def train_model(context: OpExecutionContext) -> None:
    """Two of the pool's slots: a training run weighs twice a scoring run."""
    run_holding(context, ["python3", "-m", "train"], slots=2)


@asset(pool="warehouse")
def daily_report(context: AssetExecutionContext) -> None:
    """An asset in the same pool: its step holds a warehouse slot too."""
    run_holding(context, ["python3", "-m", "reports.daily"])


@job
def nightly() -> None:
    dbt_build()
    train_model()
