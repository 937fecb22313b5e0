"""The reconcile engine: one run of a key (:mod:`engine.runner`) with its outcome (:mod:`engine.outcome`), the way into
the work queue (:mod:`engine.enqueue`), own writes (:mod:`engine.own_writes`), the periodic sweeps' marks
(:mod:`engine.sweeps`), the run's log line, metrics, shutdown and the per-process runtime. Celery stays in
:mod:`workers`, which imports the engine and hands it what it needs of Celery (a :class:`engine.enqueue.Publisher` of
runs and the queue's message encoder), never the reverse; the queue is :mod:`workqueue`; the domain, :mod:`poolboy`.
"""
