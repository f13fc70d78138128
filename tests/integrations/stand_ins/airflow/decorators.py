"""airflow.decorators.task and dag (Airflow 2; airflow.sdk's in Airflow 3).

@task and @task(pool=, pool_slots=, priority_weight=, ...) give a decorated
task as Airflow's _TaskDecorator: its `function` (the body a worker calls)
and `kwargs` (the operator's arguments); `.expand(...)` maps it and
`.override(...)` changes its arguments, as inside a DAG body. A dag's
definition is recorded; its body (which wires tasks) is never run here.
"""
DAGS = []


class TaskDecorator:
    def __init__(self, function, kwargs):
        self.function = function
        self.kwargs = dict(kwargs)
        self.__name__ = function.__name__

    def override(self, **kwargs):
        return TaskDecorator(self.function, {**self.kwargs, **kwargs})

    def expand(self, **_mapped):
        """A mapped task: one task instance per value, each with its map_index."""
        return self

    def operator(self):
        """The operator a worker's context holds as "task" (BaseOperator's defaults)."""
        from airflow.models.baseoperator import BaseOperator
        kwargs = dict(self.kwargs)
        return BaseOperator(task_id=kwargs.pop("task_id", self.function.__name__), **kwargs)


def task(fn=None, **options):
    if fn is None:
        return lambda f: TaskDecorator(f, options)
    return TaskDecorator(fn, options)


def dag(**options):
    def define(fn):
        def build():
            DAGS.append((fn.__name__, options))
            return fn.__name__
        return build
    return define
