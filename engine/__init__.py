"""The reconcile engine: one run of a key (:mod:`engine.runner`) with its outcome (:mod:`engine.outcome`), the way into
the work queue (:mod:`engine.enqueue`), own writes (:mod:`engine.own_writes`), the periodic sweeps' marks
(:mod:`engine.sweeps`), the run's log line, metrics, shutdown and the per-process runtime. Celery stays in
:mod:`workers`; the queue is :mod:`workqueue`; the domain, :mod:`poolboy`.
"""
