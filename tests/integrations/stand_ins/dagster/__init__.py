"""A stand-in for the names of Dagster the recipe imports (README.md)."""


class Failure(Exception):
    """dagster.Failure: an op's deliberate failure, with a description."""


class OpExecutionContext:
    """dagster.OpExecutionContext: the tests pass objects with its run_id, op_def.name and log."""


def op(fn=None, **_options):
    """@op or @op(...): the body, as Dagster calls it with the context."""
    if fn is None:
        return lambda f: f
    return fn


def job(fn=None, **_options):
    """@job: a definition, never run here."""
    def define(f):
        f.is_job_definition = True
        return f
    return define(fn) if fn is not None else define
