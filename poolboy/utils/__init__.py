"""Pure utilities with no Kubernetes and no Poolboy semantics: sandboxed templating (and its JMESPath functions),
JSON patch, deep merge, OpenAPI schema validation and defaults, time intervals and timestamps, and a run's
cooperative stop points (:mod:`poolboy.utils.cancellation`)."""
