"""airflow.sdk (Airflow 3's Task SDK): dag, task and get_current_context from
one import path. Here the same stand-ins as Airflow 2's paths; a test hides
this module (sys.modules["airflow.sdk"] = None) to run the 2.x fallback."""
from airflow.decorators import dag, task  # noqa: F401
from airflow.operators.python import get_current_context  # noqa: F401
