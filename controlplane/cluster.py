"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and kube-controller-manager, as envtest runs
them (no kubelet, no scheduler), for the end-to-end tests, the benchmarks and ``poolboy dev --cluster real``.

``with ControlPlane(crds=[...]) as cluster: cluster.kubeconfig`` starts the three on free loopback ports with a CA
of their own, RBAC authorization and service-account signing keys (so the TokenRequest API works), waits for the
API server's ``/readyz`` and for the controller manager's first service account, installs the CRDs and waits until
they are Established. ``add_user(name, groups)`` mints a client certificate for a user; ``restart_apiserver``,
``restart_etcd`` and ``compact_etcd`` are there for fault tests; ``counters()`` counts the requests the API server
served (from its audit log) as devcluster counts them.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controlplane import audit, pki
from controlplane.binaries import Binaries, find_binaries
from devcluster.faults import Faults
from procutil import ChildProcess, InTemporaryDirectory, free_port

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
SERVICE_CIDR = "10.0.0.0/24"
ISSUER = "https://kubernetes.default.svc.cluster.local"
#: the controllers a cluster without nodes needs: owners' dependents collected, namespaces emptied on deletion,
#: every namespace's ``default`` ServiceAccount and the token Secrets some tools still ask for, and the rules of
#: aggregated ClusterRoles (``view``, ``edit``, ``admin``: empty until this controller fills them)
CONTROLLERS = ("garbage-collector-controller", "namespace-controller", "serviceaccount-controller",
               "serviceaccount-token-controller", "clusterrole-aggregation-controller")
#: what turns a Deployment into Pod objects (its ReplicaSets, and their Pods, which admission judges, PodSecurity
#: included); nothing schedules or runs them. Left out of :data:`CONTROLLERS`: a Deployment that Poolboy manages
#: would get a status and Pods the end-to-end tests do not expect
WORKLOAD_CONTROLLERS = ("deployment-controller", "replicaset-controller")
#: the Common Name of the fault proxy's certificate, the one name the API server takes identity headers from
FRONT_PROXY_NAME = "front-proxy-client"
#: the Common Name of the API server's client certificate for kubelets
KUBELET_CLIENT = "kube-apiserver-kubelet-client"
#: admission plugins beyond the API server's defaults: OpenShift's owner-reference check, where upstream runs
EXTRA_ADMISSION = ("OwnerReferencesPermissionEnforcement",)


@dataclass(frozen=True)
class User:
    """A named user (a client certificate the CA signed) and a kubeconfig of its own."""

    name: str
    groups: tuple[str, ...]
    kubeconfig: Path

    def api_client(self) -> Any:
        """An official ``kubernetes`` ApiClient that authenticates as this user."""
        return api_client(self.kubeconfig)


def api_client(kubeconfig: Path) -> Any:
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration)


class ControlPlane(InTemporaryDirectory):
    """etcd, kube-apiserver and kube-controller-manager as child processes; see the module docstring."""

    def __init__(self, crds: list[str | Path] | None = None, kubeconfig: str | Path | None = None,
                 log_dir: str | Path | None = None, binaries: Binaries | None = None,
                 startup_timeout: float = 120.0, apiserver_args: list[str] | None = None, port: int = 0,
                 audit_log: bool = True, fault_proxy: bool = False,
                 controllers: tuple[str, ...] = CONTROLLERS) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="control-plane-")
        self.dir = Path(self._tmp.name)
        self.kubeconfig = Path(kubeconfig) if kubeconfig else self.dir / "kubeconfig"
        self.log_dir = Path(log_dir) if log_dir else self.dir
        self.crds = [Path(c) for c in (crds or [])]
        self._binaries = binaries
        self.startup_timeout = startup_timeout
        self.apiserver_args = list(apiserver_args or [])
        self.audit_log = audit_log
        self.fault_proxy = fault_proxy
        self.controllers = controllers
        self.proxy: ChildProcess | None = None
        self.apiserver_url = ""
        self.proxy_port = 0
        self._audit = audit.AuditCounters(self.dir / "audit" / "audit.log")
        self.etcd_port = self.peer_port = 0
        self.port = port
        self.url = ""
        self.etcd: ChildProcess | None = None
        self.apiserver: ChildProcess | None = None
        self.controller_manager: ChildProcess | None = None
        self.ca: pki.CertificateAuthority | None = None
        self._admin: pki.KeyPair | None = None

    # --- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        binaries = self._binaries or find_binaries()
        self._binaries = binaries
        self.etcd_port, self.peer_port = free_port(LOOPBACK), free_port(LOOPBACK)
        self.port = self.port or free_port(LOOPBACK)
        self.apiserver_url = f"https://{LOOPBACK}:{self.port}"
        self.proxy_port = free_port(LOOPBACK) if self.fault_proxy else 0
        #: where clients go (the kubeconfig's server): the fault proxy when there is one, else the API server
        self.url = f"https://{LOOPBACK}:{self.proxy_port}" if self.fault_proxy else self.apiserver_url
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._write_pki()
        try:
            self.start_etcd()
            self.start_apiserver()
            self.start_controller_manager()
            self._wait_for_controllers()
            if self.fault_proxy:
                self.start_proxy()
            if self.crds:
                self.install_crds(self.crds)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for child in (self.proxy, self.controller_manager, self.apiserver, self.etcd):
            if child is not None:
                child.stop()
        self.proxy = self.controller_manager = self.apiserver = self.etcd = None

    # --- certificates and kubeconfigs ------------------------------------------------------------------------

    def _write_pki(self) -> None:
        pki_dir = self.dir / "pki"
        pki_dir.mkdir(exist_ok=True)
        self.ca = pki.CertificateAuthority()
        self.ca.pair.write(pki_dir, "ca")
        self.ca.serving().write(pki_dir, "apiserver")
        pki.service_account_keys().write(pki_dir, "sa")
        front_proxy = pki.CertificateAuthority("poolboy-front-proxy-ca")
        front_proxy.pair.write(pki_dir, "front-proxy-ca")
        front_proxy.client(FRONT_PROXY_NAME).write(pki_dir, "front-proxy-client")
        # what the API server shows itself as to a kubelet (logs, exec, port-forward): kubeadm's name, which
        # ``Node.start`` binds to the kubelet API's admin role
        self.ca.client(KUBELET_CLIENT).write(pki_dir, "kubelet-client")
        self._admin = self.ca.client("kubernetes-admin", ("system:masters",))
        self._admin.write(pki_dir, "admin")
        self._write_kubeconfig(self.kubeconfig, "admin", self._admin)
        manager = self.ca.client("system:kube-controller-manager")
        self._write_kubeconfig(self.dir / "controller-manager.kubeconfig", "system:kube-controller-manager", manager,
                               server=self.apiserver_url)

    def _write_kubeconfig(self, path: Path, user: str, pair: pki.KeyPair, server: str = "",
                          tls_server_name: str = "") -> None:
        """A kubeconfig with everything inline: the cluster's CA and the user's certificate and key; the server is
        where clients go (:attr:`url`) unless ``server`` says otherwise, verified as ``tls_server_name`` when given
        (a forwarded address the serving certificate does not name)."""
        assert self.ca is not None
        encoded = {name: base64.b64encode(data).decode() for name, data in
                   (("ca", self.ca.certificate), ("cert", pair.certificate), ("key", pair.key))}
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "poolboy-control-plane",
                          "cluster": {"server": server or self.url,
                                      "certificate-authority-data": encoded["ca"],
                                      **({"tls-server-name": tls_server_name} if tls_server_name else {})}}],
            "users": [{"name": user, "user": {"client-certificate-data": encoded["cert"],
                                               "client-key-data": encoded["key"]}}],
            "contexts": [{"name": user, "context": {"cluster": "poolboy-control-plane", "user": user,
                                                     "namespace": "default"}}],
            "current-context": user,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(yaml.safe_dump(config, sort_keys=False))

    def add_user(self, name: str, groups: tuple[str, ...] | list[str] = ()) -> User:
        """A client certificate for ``name`` in ``groups`` and a kubeconfig that uses it (envtest's ``AddUser``)."""
        kubeconfig = self.dir / "users" / f"{name.replace(':', '_')}.kubeconfig"
        self.write_kubeconfig(kubeconfig, name, groups)
        return User(name, tuple(groups), kubeconfig)

    def write_kubeconfig(self, path: Path, name: str, groups: tuple[str, ...] | list[str] = (), server: str = "",
                         tls_server_name: str = "") -> Path:
        """A client certificate for ``name`` in ``groups`` and a kubeconfig at ``path`` that uses it, for ``server``
        (default: where clients go) verified as ``tls_server_name`` when given; a node's components use these."""
        assert self.ca is not None, "not started"
        self._write_kubeconfig(path, name, self.ca.client(name, tuple(groups)), server, tls_server_name)
        return path

    # --- components ----------------------------------------------------------------------------------------

    def _child(self, name: str, argv: list[str]) -> ChildProcess:
        return ChildProcess(argv, self.log_dir / f"{name}.log", env={**os.environ, "GOMAXPROCS": "2"}).start()

    def start_etcd(self) -> None:
        """etcd on loopback, in the control plane's data directory (a restart keeps the data)."""
        assert self._binaries is not None
        client, peer = f"http://{LOOPBACK}:{self.etcd_port}", f"http://{LOOPBACK}:{self.peer_port}"
        self.etcd = self._child("etcd", [
            str(self._binaries.etcd), "--name=control-plane", f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=control-plane={peer}",
            # a test cluster's data is thrown away: no fsync per write (envtest does the same)
            "--unsafe-no-fsync=true", "--log-level=warn",
        ])
        self.etcd.wait_until(self._etcd_healthy, self.startup_timeout, "etcd")

    def start_apiserver(self) -> None:
        """kube-apiserver on its port (the same one after a restart), waiting for ``/readyz``."""
        assert self._binaries is not None
        pki_dir = self.dir / "pki"
        self.apiserver = self._child("kube-apiserver", [
            str(self._binaries.kube_apiserver),
            f"--etcd-servers=http://{LOOPBACK}:{self.etcd_port}",
            f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}", f"--secure-port={self.port}",
            f"--cert-dir={self.dir / 'apiserver'}",
            f"--tls-cert-file={pki_dir / 'apiserver.crt'}", f"--tls-private-key-file={pki_dir / 'apiserver.key'}",
            f"--client-ca-file={pki_dir / 'ca.crt'}",
            # the fault proxy passes the caller's identity on as the aggregation layer does (controlplane/proxy.py)
            f"--requestheader-client-ca-file={pki_dir / 'front-proxy-ca.crt'}",
            f"--requestheader-allowed-names={FRONT_PROXY_NAME}",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            # and shows itself with the same certificate to an aggregated API server (a node's metrics-server),
            # which takes the caller's identity from those headers
            f"--proxy-client-cert-file={pki_dir / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki_dir / 'front-proxy-client.key'}",
            "--authorization-mode=RBAC",
            f"--enable-admission-plugins={','.join(EXTRA_ADMISSION)}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={pki_dir / 'sa.crt'}",
            f"--service-account-signing-key-file={pki_dir / 'sa.key'}",
            # the ``kubernetes`` Service's endpoints may not point at loopback: nothing in the cluster reaches it
            "--endpoint-reconciler-type=none",
            f"--kubelet-client-certificate={pki_dir / 'kubelet-client.crt'}",
            f"--kubelet-client-key={pki_dir / 'kubelet-client.key'}",
            "--allow-privileged=true", "--profiling=false",
            *(audit.apiserver_args(self.dir / "audit") if self.audit_log else []),
            *self.apiserver_args,
        ])
        self.apiserver.wait_until(self._apiserver_ready, self.startup_timeout, "kube-apiserver")

    def start_controller_manager(self) -> None:
        assert self._binaries is not None
        if self._binaries.kube_controller_manager is None:
            return
        pki_dir = self.dir / "pki"
        self.controller_manager = self._child("kube-controller-manager", [
            str(self._binaries.kube_controller_manager),
            f"--kubeconfig={self.dir / 'controller-manager.kubeconfig'}",
            f"--controllers={','.join(self.controllers)}",
            # each controller acts as its own service account, with the bootstrap roles made for it
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki_dir / 'sa.key'}",
            f"--root-ca-file={pki_dir / 'ca.crt'}",
            "--leader-elect=false", f"--bind-address={LOOPBACK}", "--secure-port=0",
        ])

    def start_proxy(self) -> None:
        self.proxy = ChildProcess(
            [sys.executable, "-m", "controlplane.proxy", "--target", self.apiserver_url,
             "--port", str(self.proxy_port), "--pki", str(self.dir / "pki")],
            self.log_dir / "fault-proxy.log", env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=ROOT).start()
        self.proxy.wait_until(lambda: self._answers(self.url + "/_proxy/faults"), self.startup_timeout,
                              "fault proxy")

    def set_faults(self, error_rate: float = 0.0, codes: list[int] | None = None, retry_after: int | None = None,
                   latency_ms: float = 0.0, verbs: list[str] | None = None, kinds: list[str] | None = None,
                   include_watch: bool = False, after_commit: bool = False) -> dict[str, Any]:
        """Inject faults into the requests that go through the fault proxy (devcluster's ``set_faults``)."""
        faults = Faults(error_rate, codes or [500], retry_after, latency_ms, verbs or None, kinds or None,
                        include_watch, after_commit)
        return dict(self._proxy_admin(faults.to_json()))

    def clear_faults(self) -> None:
        self._proxy_admin({})

    def _proxy_admin(self, body: dict[str, Any]) -> Any:
        if self.proxy is None:
            raise RuntimeError("faults need the fault proxy: ControlPlane(fault_proxy=True)")
        return self.request("PUT", "/_proxy/faults", body, base=self.url)

    def processes(self) -> list[tuple[str, Callable[[], ChildProcess | None], Callable[[], None]]]:
        """(name, the process now, start it again) of each component this control plane runs, for a supervisor
        (``poolboy dev`` restarts one that dies; etcd keeps its data)."""
        parts: list[tuple[str, Callable[[], ChildProcess | None], Callable[[], None]]] = [
            ("etcd", lambda: self.etcd, self.start_etcd),
            ("kube-apiserver", lambda: self.apiserver, self.start_apiserver),
            ("kube-controller-manager", lambda: self.controller_manager, self.start_controller_manager),
            ("fault-proxy", lambda: self.proxy, self.start_proxy),
        ]
        return [part for part in parts if part[1]() is not None]

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM) and start it again on the same port; returns once it is ready."""
        assert self.apiserver is not None, "not started"
        self.apiserver.stop()
        self.start_apiserver()

    def restart_etcd(self) -> None:
        """Stop etcd and start it again on the same data: the API server loses its storage for that long."""
        assert self.etcd is not None, "not started"
        self.etcd.stop()
        self.start_etcd()

    # --- probes and admin requests ---------------------------------------------------------------------------

    @property
    def ca_file(self) -> Path:
        """The cluster CA's certificate: what a pod finds in its mounted ``ca.crt``."""
        return self.dir / "pki" / "ca.crt"

    def _ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self.dir / "pki" / "admin.crt"), str(self.dir / "pki" / "admin.key"))
        return context

    def request(self, method: str, path: str, body: Any = None, timeout: float = 30.0, base: str = "",
                headers: dict[str, str] | None = None) -> Any:
        """A JSON request to the API server (or ``base``) as the admin (``system:masters``)."""
        data = json.dumps(body).encode() if body is not None else None
        content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        req = urllib.request.Request((base or self.apiserver_url) + path, data=data, method=method,
                                     headers={"Content-Type": content_type, "Accept": "application/json",
                                              **(headers or {})})
        with urllib.request.urlopen(req, timeout=timeout, context=self._ssl_context()) as response:
            raw = response.read()
        return json.loads(raw) if raw and raw[:1] in (b"{", b"[") else raw.decode()

    def _apiserver_ready(self) -> bool:
        return self._answers(self.apiserver_url + "/readyz")

    def _answers(self, url: str) -> bool:
        try:
            req = urllib.request.Request(url)
            with urllib.request.urlopen(req, timeout=2, context=self._ssl_context()) as response:
                return bool(response.status == 200)
        except (OSError, ValueError):
            return False

    def _wait_for_controllers(self) -> None:
        """Until the service-account controller has made ``default/default``: the controller manager runs."""
        if self.controller_manager is None:
            return

        def made() -> bool:
            try:
                self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default", timeout=2)
                return True
            except (OSError, ValueError):
                return False

        self.controller_manager.wait_until(made, self.startup_timeout, "kube-controller-manager", interval=0.1)

    def api_client(self) -> Any:
        """An official ``kubernetes`` ApiClient as the admin."""
        return api_client(self.kubeconfig)

    def counters(self) -> dict[str, Any]:
        """The requests served since :meth:`reset_counters`, as ``devcluster``'s ``counters()`` shapes them."""
        if not self.audit_log:
            raise RuntimeError("this control plane keeps no audit log (audit_log=False)")
        return self._audit.counters()

    def requests(self) -> list[audit.Request]:
        """Every request the API server answered, with who made it and its status code, from its audit log."""
        return self._audit.requests()

    def denied(self) -> list[audit.Request]:
        """Every request the API server refused for want of a grant (403: RBAC, or an admission plugin that checks
        permissions), from its audit log."""
        return self._audit.denied()

    def reset_counters(self) -> None:
        self._audit.reset()

    # --- etcd ----------------------------------------------------------------------------------------------

    def _etcd(self, path: str, body: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """A request to etcd's JSON gateway (``/v3/...``) on its loopback client URL."""
        req = urllib.request.Request(f"http://{LOOPBACK}:{self.etcd_port}{path}", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return dict(json.loads(response.read()))

    def _etcd_healthy(self) -> bool:
        try:
            req = urllib.request.Request(f"http://{LOOPBACK}:{self.etcd_port}/health")
            with urllib.request.urlopen(req, timeout=2) as response:
                return bool(json.loads(response.read()).get("health") == "true")
        except (OSError, ValueError):
            return False

    def etcd_revision(self) -> int:
        """etcd's current revision (the number behind every resourceVersion the API server hands out)."""
        return int(self._etcd("/v3/maintenance/status", {})["header"]["revision"])

    def compact_etcd(self) -> int:
        """Compact etcd's history past every resourceVersion a client may hold, physically; returns the revision. A
        client's resourceVersion can equal the current revision (its watch saw the last write, or a bookmark brought
        it there), so a write outside the API server's keys first moves the revision beyond it: a watch that then
        resumes from any resourceVersion it holds, past the API server's watch cache, meets a real 410 Gone."""
        key = base64.b64encode(b"/controlplane/compaction-mark").decode()
        put = self._etcd("/v3/kv/put", {"key": key, "value": base64.b64encode(b"mark").decode()})
        revision = int(put["header"]["revision"])
        self._etcd("/v3/kv/compaction", {"revision": revision, "physical": True}, timeout=30)
        return revision

    # --- CRDs ----------------------------------------------------------------------------------------------

    def install_crds(self, paths: list[Path], timeout: float = 60.0) -> None:
        """Create (or replace) every CRD in ``paths`` and wait until the API server serves each: Established, and
        its storage initialised (until then a list is a 429 "storage is (re)initializing")."""
        self.install(load_documents(paths), timeout)

    def install(self, crds: list[dict[str, Any]], timeout: float = 60.0) -> None:
        """:meth:`install_crds` of CRD documents."""
        names = [self.apply_crd(crd) for crd in crds]
        deadline = time.monotonic() + timeout
        for name, crd in zip(names, crds, strict=True):
            while not (self._established(name) and self._lists(crd)):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"CRD {name} not served after {timeout} s")
                time.sleep(0.05)

    def _lists(self, crd: dict[str, Any]) -> bool:
        spec = crd["spec"]
        version = next(v["name"] for v in spec["versions"] if v.get("served", True))
        try:
            self.request("GET", f"/apis/{spec['group']}/{version}/{spec['names']['plural']}?limit=1")
        except urllib.error.HTTPError as error:
            if error.code == 429:
                return False
            raise
        return True

    def apply_crd(self, crd: dict[str, Any]) -> str:
        name = str(crd["metadata"]["name"])
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        try:
            self.request("POST", path, crd)
        except urllib.error.HTTPError as error:
            if error.code != 409:
                raise RuntimeError(f"CRD {name} refused: {error.read().decode(errors='replace')}") from error
            live = self.request("GET", f"{path}/{name}")
            crd = {**crd, "metadata": {**crd["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}}
            self.request("PUT", f"{path}/{name}", crd)
        return name

    def _established(self, name: str) -> bool:
        crd = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = (crd.get("status") or {}).get("conditions") or []  # null while the CRD is new
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def load_documents(paths: list[Path]) -> list[dict[str, Any]]:
    """Every YAML document of the files (a directory: its ``*.yaml`` and ``*.yml``, sorted)."""
    files: list[Path] = []
    for path in paths:
        files += sorted([*path.glob("*.yaml"), *path.glob("*.yml")]) if path.is_dir() else [path]
    return [doc for file in files for doc in yaml.safe_load_all(file.read_text()) if doc]
