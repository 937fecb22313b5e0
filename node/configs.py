"""The configuration files of a node's components, as text: containerd's, the CNI network's, the kubelet's,
kube-proxy's and CoreDNS's. Pure functions of a :class:`~node.layout.Layout`, so what a node runs with can be read
(and tested) without starting one."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from node.layout import CLUSTER_DOMAIN, KUBELET_PORT, NODE_NAME, POD_CIDR, POD_GATEWAY, Layout


def containerd(layout: Layout, runc: Path, cni_plugins: Path, sandbox_image: str) -> str:
    """containerd 2's configuration (version 3): every directory and socket inside the node's own, runc's state
    too; the CRI plugin's sandbox image (node/pause.c, imported) pinned: never garbage-collected, never pulled; the
    plugins that need hardware or kernel features these machines lack switched off, so the log shows only what
    matters."""
    cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
    lines = [
        "version = 3",
        f"root = {json.dumps(str(layout.path('containerd', 'root')))}",
        f"state = {json.dumps(str(layout.path('containerd', 'state')))}",
        "disabled_plugins = ['io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.zfs',",
        "  'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.blockfile',",
        "  'io.containerd.snapshotter.v1.erofs', 'io.containerd.nri.v1.nri',",
        "  'io.containerd.tracing.processor.v1.otlp', 'io.containerd.internal.v1.tracing',",
        "  'io.containerd.internal.v1.opt']",
        "[grpc]",
        f"  address = {json.dumps(str(layout.containerd_socket))}",
        "[ttrpc]",
        f"  address = {json.dumps(str(layout.containerd_socket) + '.ttrpc')}",
        "[plugins.'io.containerd.cri.v1.images']",
        "  snapshotter = 'overlayfs'",
        "  [plugins.'io.containerd.cri.v1.images'.pinned_images]",
        f"    sandbox = {json.dumps(sandbox_image)}",
        f"[{cri_runtime}]",
        "  enable_selinux = false",
        "  netns_mounts_under_state_dir = true",
        # these VMs grant no CAP_SYS_RESOURCE, not even to root: a container's oom_score_adj may not go below
        # containerd's own (the pause container's -998, a Guaranteed pod's -997 would be refused)
        "  restrict_oom_score_adj = true",
        f"  [{cri_runtime}.containerd]",
        "    default_runtime_name = 'runc'",
        f"    [{cri_runtime}.containerd.runtimes.runc]",
        "      runtime_type = 'io.containerd.runc.v2'",
        f"      [{cri_runtime}.containerd.runtimes.runc.options]",
        f"        BinaryName = {json.dumps(str(runc))}",
        f"        Root = {json.dumps(str(layout.path('runc')))}",
        "        SystemdCgroup = false",
        f"  [{cri_runtime}.cni]",
        f"    bin_dirs = [{json.dumps(str(cni_plugins))}]",
        f"    conf_dir = {json.dumps(str(layout.path('cni', 'net.d')))}",
        "[plugins.'io.containerd.grpc.v1.cri']",
        "  stream_server_address = '127.0.0.1'",
        "",
    ]
    return "\n".join(lines)


def cni_network(layout: Layout) -> str:
    """The pods' network: a bridge inside the node's network namespace, addresses from :data:`POD_CIDR`, traffic
    that leaves the pod network masqueraded (so the host needs no route back), hairpin for a pod that reaches
    itself through its Service, and host ports (``portmap``)."""
    return json.dumps({
        "cniVersion": "1.0.0",
        "name": "poolboy-node",
        "plugins": [
            {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": True, "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR, "gateway": POD_GATEWAY}]],
                      "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(layout.path("cni", "ipam"))}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }, indent=2)


def kubelet(layout: Layout, ca_file: Path) -> str:
    """The kubelet's configuration: cgroup v1 with the cgroupfs driver (these machines run no systemd), under the
    node's own cgroup; clients authenticated by the cluster's CA or a token and authorized by the API server; the
    cluster DNS on the node's address; imported images never garbage-collected (nothing could pull them back)."""
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # kubelet 1.35 and later refuse a cgroup v1 host unless told not to; these VMs have cgroup v1 controllers
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": layout.cgroup,
        "cgroupsPerQOS": True,
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "address": layout.node_ip,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(ca_file)}},
        "authorization": {"mode": "Webhook"},
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [layout.node_ip],
        "resolvConf": str(layout.path("resolv.conf")),
        "failSwapOn": False,
        "podLogsDir": str(layout.path("pod-logs")),
        "serializeImagePulls": False,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # a test machine's disk may be nearly full: evict only when it really is
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "protectKernelDefaults": False,
        "makeIPTablesUtilChains": False,
        "nodeStatusUpdateFrequency": "10s",
        "shutdownGracePeriod": "0s",
    }
    return yaml.safe_dump(config, sort_keys=False)


def kube_proxy(layout: Layout, kubeconfig: Path) -> str:
    """kube-proxy in iptables mode inside the node's network namespace (its rules are that namespace's only); no
    conntrack table resizing (a host-wide setting), NodePorts on the node's address only."""
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "hostnameOverride": NODE_NAME,
        "bindAddress": layout.node_ip,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        "conntrack": {"maxPerCore": 0, "min": 0},
        "nodePortAddresses": [f"{layout.node_ip}/32"],
    }
    return yaml.safe_dump(config, sort_keys=False)


def corefile(layout: Layout, kubeconfig: Path) -> str:
    """CoreDNS as the cluster DNS: Services and Pods of ``cluster.local`` from the API, on the node's address;
    nothing is forwarded (these machines' network is closed), so any other name is refused at once."""
    return "\n".join([
        ".:53 {",
        f"    bind {layout.node_ip}",
        "    errors",
        f"    health {layout.node_ip}:8080",
        f"    ready {layout.node_ip}:8181",
        f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{",
        f"        kubeconfig {kubeconfig}",
        "        pods insecure",
        "        fallthrough in-addr.arpa ip6.arpa",
        "    }",
        "    cache 30",
        "}",
        "",
    ])


def resolv_conf(layout: Layout) -> str:
    """The resolv.conf the kubelet gives pods with ``dnsPolicy: Default`` (and reads for the search path)."""
    return f"nameserver {layout.node_ip}\n"
