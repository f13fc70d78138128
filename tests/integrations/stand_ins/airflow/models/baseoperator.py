"""airflow.models.baseoperator.BaseOperator: the arguments the recipe reads,
with Airflow's defaults (the pool default_pool, 1 slot, priority weight 1)."""


class BaseOperator:
    def __init__(self, task_id, pool=None, pool_slots=1, priority_weight=1, **_others):
        self.task_id = task_id
        self.pool = pool or "default_pool"
        self.pool_slots = pool_slots
        self.priority_weight = priority_weight

    @property
    def priority_weight_total(self):
        """With the default weight rule (downstream) and no downstream task: its own."""
        return self.priority_weight
