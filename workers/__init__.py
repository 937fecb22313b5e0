"""Celery adapter: the app, the per-kind reconcile tasks, the Redis work gate and due-index, beat sweeps."""
