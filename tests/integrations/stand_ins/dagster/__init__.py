"""A stand-in for the names of Dagster the recipe imports (README.md).

Shaped as Dagster's own (1.10 and later): @op returns an OpDefinition with
its name, tags and pool (pool= or, before, the tag dagster/concurrency_key);
@asset returns an AssetsDefinition whose op is such a definition; the
contexts hand an op its run_id, op_def, op_handle (str: the node's name, an
alias if aliased), get_mapping_key() and log, and an asset's context its op
context as op_execution_context.
"""

CONCURRENCY_KEY_TAG = "dagster/concurrency_key"


class Failure(Exception):
    """dagster.Failure: an op's deliberate failure, with a description."""


class OpDefinition:
    """dagster.OpDefinition: callable as the op's body (a direct invocation)."""

    def __init__(self, fn, name=None, tags=None, pool=None):
        self.compute_fn = fn
        self.name = name or fn.__name__
        self.tags = dict(tags or {})
        self._pool = pool

    @property
    def pool(self):
        """The op's pool; the tag dagster/concurrency_key for an op defined before pool=."""
        return self._pool or self.tags.get(CONCURRENCY_KEY_TAG)

    def __call__(self, *args, **kwargs):
        return self.compute_fn(*args, **kwargs)


class AssetsDefinition:
    """dagster.AssetsDefinition: the asset's op is what a run executes."""

    def __init__(self, op_def):
        self.op = op_def
        self.key = op_def.name

    def __call__(self, *args, **kwargs):
        return self.op(*args, **kwargs)


class NodeHandle:
    """A node's handle: str() is its path (its name, or alias, at the top level)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


class OpExecutionContext:
    """dagster.OpExecutionContext, as Dagster builds it for one step."""

    def __init__(self, run_id, op_def, log, alias=None, mapping_key=None):
        self.run_id = run_id
        self.op_def = op_def
        self.op_handle = NodeHandle(alias or op_def.name)
        self.log = log
        self._mapping_key = mapping_key

    def get_mapping_key(self):
        """The mapping key of a step downstream of a DynamicOutput, else None."""
        return self._mapping_key


class AssetExecutionContext:
    """dagster.AssetExecutionContext: wraps the step's op context."""

    def __init__(self, op_execution_context):
        self.op_execution_context = op_execution_context

    @property
    def run_id(self):
        return self.op_execution_context.run_id

    @property
    def op_def(self):
        return self.op_execution_context.op_def

    @property
    def log(self):
        return self.op_execution_context.log


def op(fn=None, *, name=None, tags=None, pool=None, **_options):
    """@op or @op(name=, tags=, pool=, ...): an OpDefinition."""
    def define(f):
        return OpDefinition(f, name=name, tags=tags, pool=pool)
    return define(fn) if fn is not None else define


def asset(fn=None, *, name=None, op_tags=None, pool=None, **_options):
    """@asset or @asset(name=, op_tags=, pool=, ...): an AssetsDefinition."""
    def define(f):
        return AssetsDefinition(OpDefinition(f, name=name, tags=op_tags, pool=pool))
    return define(fn) if fn is not None else define


def job(fn=None, **_options):
    """@job: a definition, never run here."""
    def define(f):
        f.is_job_definition = True
        return f
    return define(fn) if fn is not None else define
