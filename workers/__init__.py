"""Celery adapter: the app, the per-kind reconcile tasks, the Redis work queue and delaying queue, beat sweeps."""
