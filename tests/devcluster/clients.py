"""Client processes for the concurrency tests: ``python -m tests.devcluster.clients <role> ...``.

Each role is a separate OS process with its own ``kubernetes`` client, so the server sees truly concurrent
connections (not threads sharing one interpreter lock and one connection pool).
Roles:
  writer KUBECONFIG NAMESPACE PREFIX COUNT      create then patch COUNT configmaps named PREFIX-i
  watcher KUBECONFIG NAMESPACE RV EXPECTED       print one JSON line per watch event until EXPECTED events
  incrementer KUBECONFIG NAMESPACE NAME TIMES    read-modify-write a counter TIMES, retrying on 409
"""

from __future__ import annotations

import json
import sys

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException


def core_api(kubeconfig: str) -> client.CoreV1Api:
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    return client.CoreV1Api(client.ApiClient(configuration))


def writer(kubeconfig: str, namespace: str, prefix: str, count: str) -> None:
    core = core_api(kubeconfig)
    for i in range(int(count)):
        name = f"{prefix}-{i}"
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name}, "data": {"v": "0"}})
        core.patch_namespaced_config_map(name, namespace, {"data": {"v": "1"}},
                                         _content_type="application/merge-patch+json")


def watcher(kubeconfig: str, namespace: str, resource_version: str, expected: str) -> None:
    core = core_api(kubeconfig)
    stream = watch.Watch()
    events = stream.stream(core.list_namespaced_config_map, namespace, resource_version=resource_version,
                           timeout_seconds=60, _request_timeout=90)
    for seen, event in enumerate(events, start=1):
        meta = event["raw_object"].get("metadata", {})
        print(json.dumps([event["type"], meta.get("name"), meta.get("resourceVersion")]), flush=True)
        if seen >= int(expected):
            stream.stop()


def incrementer(kubeconfig: str, namespace: str, name: str, times: str) -> None:
    core = core_api(kubeconfig)
    done = 0
    while done < int(times):
        current = core.read_namespaced_config_map(name, namespace)
        current.data["n"] = str(int(current.data["n"]) + 1)
        try:
            core.replace_namespaced_config_map(name, namespace, current)
        except ApiException as error:
            if error.status != 409:
                raise
            continue
        done += 1


ROLES = {"writer": writer, "watcher": watcher, "incrementer": incrementer}

if __name__ == "__main__":
    ROLES[sys.argv[1]](*sys.argv[2:])
