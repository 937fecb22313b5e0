"""The watcher: list-then-watch every Poolboy kind and managed resource kind, turning events into work queue adds."""
