"""Process-level entry points: the ``poolboy`` CLI and the ``poolboy dev`` local stack supervisor."""
