"""OpenShift's user API on plain Kubernetes, for the requester tests: ``users`` and ``identities`` of
``user.openshift.io/v1`` served as CustomResourceDefinitions with the shape Poolboy reads (cluster-scoped, the fields
at the top level as OpenShift has them), and OpenShift's project-request rule that a namespace names the user who
created it, as a MutatingAdmissionPolicy that stamps ``openshift.io/requester`` from the API server's own idea of
the requesting user.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.waiting import wait_for

GROUP, VERSION = "user.openshift.io", "v1"
REQUESTER = "openshift.io/requester"


def _crd(kind: str, plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Cluster",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                 "versions": [{"name": VERSION, "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


#: on CREATE of a Namespace, ``metadata.annotations["openshift.io/requester"]`` = the authenticated user's name
REQUESTER_POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
    "metadata": {"name": "openshift-project-requester"},
    "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                "resources": ["namespaces"]}]},
        "failurePolicy": "Fail",
        "reinvocationPolicy": "Never",
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": (
            'has(object.metadata.annotations) ? '
            '[JSONPatch{op: "add", path: "/metadata/annotations/openshift.io~1requester", '
            'value: request.userInfo.username}] : '
            '[JSONPatch{op: "add", path: "/metadata/annotations", '
            'value: {"openshift.io/requester": request.userInfo.username}}]')}}],
    },
}
REQUESTER_BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
    "metadata": {"name": "openshift-project-requester"},
    "spec": {"policyName": "openshift-project-requester"},
}


def install_api(cluster: Any) -> None:
    """Serve ``users`` and ``identities`` of ``user.openshift.io/v1`` (the API server's real CRD machinery)."""
    cluster.install([_crd("User", "users"), _crd("Identity", "identities")])


def stamp_requesters(api: client.ApiClient) -> None:
    """From now on every Namespace created names its creator in ``openshift.io/requester`` (once the API server
    applies the policy: a dry-run create shows it)."""
    custom = client.CustomObjectsApi(api)
    for body, plural in ((REQUESTER_POLICY, "mutatingadmissionpolicies"),
                         (REQUESTER_BINDING, "mutatingadmissionpolicybindings")):
        custom.create_cluster_custom_object("admissionregistration.k8s.io", "v1", plural, body)
    core = client.CoreV1Api(api)
    wait_for(lambda: (core.create_namespace({"metadata": {"generateName": "probe-"}}, dry_run="All").metadata
                      .annotations or {}).get(REQUESTER), timeout=15, interval=0.2, message="the requester policy")


def create_user(api: client.ApiClient, name: str, email: str, full_name: str = "") -> None:
    """An OpenShift user with one identity whose ``extra`` holds what Poolboy reads. OpenShift names identities
    ``<provider>:<user>``; a custom resource's name cannot hold a colon, so here it is ``<provider>.<user>``."""
    custom = client.CustomObjectsApi(api)
    identity = f"htpasswd.{name}"
    custom.create_cluster_custom_object(GROUP, VERSION, "users", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "User", "metadata": {"name": name},
        "fullName": full_name or name, "identities": [identity]})
    custom.create_cluster_custom_object(GROUP, VERSION, "identities", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Identity", "metadata": {"name": identity},
        "providerName": "htpasswd", "providerUserName": name, "user": {"name": name},
        "extra": {"email": email, "name": full_name or name, "preferred_username": name}})
