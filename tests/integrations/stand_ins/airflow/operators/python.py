"""airflow.operators.python.get_current_context: the running task's context,
set by the test for the thread that runs the task (as Airflow sets it)."""
import threading

_local = threading.local()


def set_current_context(context):
    _local.context = context


def get_current_context():
    context = getattr(_local, "context", None)
    if context is None:
        raise RuntimeError("get_current_context() outside a task")
    return context
