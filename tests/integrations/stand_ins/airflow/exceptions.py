class AirflowException(Exception):
    """airflow.exceptions.AirflowException: a task's failure."""
