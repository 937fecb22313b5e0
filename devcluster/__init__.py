"""devcluster: an in-memory, single-process, Kubernetes-API-compatible server for tests and local runs."""
