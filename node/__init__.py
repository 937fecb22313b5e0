"""A Kubernetes node beside the real control plane: containerd, the kubelet, kube-proxy, CoreDNS and kube-scheduler,
built from their Go modules and started in a network namespace of their own, for the tests of the deployed chart
and ``poolboy dev --cluster node``; see ``node/README.md``."""
