"""airflow.decorators.task and dag: the task's body as a worker calls it; a
dag's definition recorded, its body (which wires tasks) never run here."""
DAGS = []


def task(fn=None, **_options):
    if fn is None:
        return lambda f: f
    return fn


def dag(**options):
    def define(fn):
        def build():
            DAGS.append((fn.__name__, options))
            return fn.__name__
        return build
    return define
