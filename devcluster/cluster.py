"""API verbs with kube-apiserver semantics on top of the store: create, get, list, replace, patch, delete,
deletecollection, plus the CRD lifecycle. Everything here is synchronous, so each verb is atomic on the loop."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import orjson

from devcluster import errors, meta, scale, versions
from devcluster.registry import Registry, ResourceType
from devcluster.schema import Cause, apply_defaults, prune, structural_causes, validate
from devcluster.store import Obj, Store

NAMESPACES = ("", "namespaces")
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
Predicate = Callable[[Obj], bool] | None
MAX_SNAPSHOTS = 256


def _key(obj: Obj) -> str:
    metadata = obj["metadata"]
    return f'{metadata.get("namespace", "")}/{metadata["name"]}'


def present(rtype: ResourceType, obj: Obj) -> Obj:
    """The stored object as the requested version (same content, the version's apiVersion)."""
    if rtype.from_storage is not None:
        return rtype.from_storage(obj)
    if obj.get("apiVersion") == rtype.api_version:
        return obj
    return {**obj, "apiVersion": rtype.api_version}


class Cluster:
    def __init__(self, history_size: int = 10000) -> None:
        self.registry = Registry()
        self.store = Store(history_size)
        self.snapshots: dict[str, list[Obj]] = {}
        self.on_delete_started: list[Callable[[ResourceType, Obj, str], None]] = []
        for name in ("default", "kube-system", "kube-public"):
            self.create(self.registry.get("", "v1", "namespaces"), "", {"metadata": {"name": name}})  # type: ignore[arg-type]

    # --- reads -----------------------------------------------------------------------------------------------

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rtype.store_key, namespace, name)
        if obj is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return obj

    def list(self, rtype: ResourceType, namespace: str | None, predicate: Predicate, limit: int = 0,
             continue_token: str = "") -> dict[str, Any]:
        """A list, paginated over a snapshot: every continuation of one list sees the same items and rv."""
        snapshot_id, offset = "", 0
        if continue_token:
            rv, snapshot_id, offset, start = self._decode_continue(continue_token)
            matching = self.snapshots.get(snapshot_id)
            if matching is None:  # snapshot evicted: continue from the live state after the last key
                snapshot_id, offset, rv = "", 0, self.store.rv
                matching = [obj for obj in self.store.iter(rtype.store_key, namespace)
                            if _key(obj) > start and (predicate is None or predicate(obj))]
        else:
            rv = self.store.rv
            matching = [obj for obj in self.store.iter(rtype.store_key, namespace)
                        if predicate is None or predicate(obj)]
        items = matching[offset:offset + limit] if limit else matching[offset:]
        remaining = len(matching) - offset - len(items)
        list_meta: dict[str, Any] = {"resourceVersion": versions.text(rv)}
        if remaining > 0:
            if not snapshot_id:
                snapshot_id = meta.new_uid()
                self.snapshots[snapshot_id] = matching
                while len(self.snapshots) > MAX_SNAPSHOTS:
                    self.snapshots.pop(next(iter(self.snapshots)))
            token = orjson.dumps({"rv": rv, "id": snapshot_id, "offset": offset + len(items),
                                  "start": _key(items[-1]) if items else ""})
            list_meta["continue"] = base64.urlsafe_b64encode(token).decode()
            if predicate is None:  # with a selector kube-apiserver cannot know the count, so it omits it
                list_meta["remainingItemCount"] = remaining
        api_version = rtype.api_version
        if rtype.from_storage is not None or any(obj.get("apiVersion") != api_version for obj in items):
            items = [present(rtype, obj) for obj in items]
        return {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": list_meta,
                "items": items}

    def _decode_continue(self, token: str) -> tuple[int, str, int, str]:
        try:
            data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
            decoded = int(data["rv"]), str(data["id"]), int(data["offset"]), str(data["start"])
        except Exception as error:
            raise errors.bad_request(f"invalid continue token: {error}") from None
        if decoded[0] < self.store.floor and decoded[1] not in self.snapshots:
            raise errors.gone("The provided continue parameter is too old to display a consistent list result. "
                              "You can start a new list without the continue parameter, or use the continue token "
                              "in this response to retrieve the remainder of the results.")
        return decoded

    # --- create ----------------------------------------------------------------------------------------------

    def create(self, rtype: ResourceType, namespace: str, body: Any, dry_run: bool = False) -> Obj:
        if rtype.to_storage is not None and isinstance(body, dict):
            missing = [f for f in ("eventTime", "reportingController", "reportingInstance") if not body.get(f)]
            if missing:
                raise errors.invalid(rtype.kind, rtype.group, (body.get("metadata") or {}).get("name", ""), [
                    {"reason": "FieldValueRequired", "field": f, "message": f"{f}: Required value"}
                    for f in missing])
        obj = self._check_body(rtype, body)
        metadata = obj.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise errors.bad_request("metadata must be an object")
        if rtype.namespaced:
            body_ns = metadata.get("namespace")
            if body_ns and body_ns != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace sent "
                                         "on the request")
            metadata["namespace"] = namespace
            self._check_namespace_open(rtype, namespace, metadata.get("name") or "")
        else:
            metadata.pop("namespace", None)
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = meta.generate_name(metadata["generateName"])
        name = metadata.get("name") or ""
        if not name:
            raise errors.invalid(rtype.kind, rtype.group, "", [{
                "reason": "FieldValueRequired", "field": "metadata.name",
                "message": "metadata.name: Required value: name or generateName is required"}])
        for field in (*meta.SYSTEM_FIELDS, "resourceVersion", "selfLink", "managedFields"):
            metadata.pop(field, None)
        if rtype.has_status and not rtype.builtin:
            obj.pop("status", None)
        self._prepare(rtype, obj, None)
        self._validate(rtype, obj, None)
        if self.store.get(rtype.store_key, metadata.get("namespace", ""), name) is not None:
            raise errors.already_exists(rtype.plural, rtype.group, name)
        metadata.update(uid=meta.new_uid(), creationTimestamp=meta.now(), generation=1)
        if dry_run:
            return obj
        stored = self.store.commit(rtype.store_key, "ADDED", obj, None)
        if rtype.store_key == CRDS:
            self.registry.install_crd(stored)
        return stored

    def _check_body(self, rtype: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if api_version and (api_version.rpartition("/")[0] != rtype.group):
            raise errors.bad_request(f"the API version in the data ({api_version}) does not match the expected "
                                     f"API version ({rtype.api_version})")
        if kind and kind != rtype.kind:
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind "
                                     f"({rtype.kind})")
        body["apiVersion"] = rtype.api_version
        body["kind"] = rtype.kind
        if rtype.to_storage is not None:
            return rtype.to_storage(body)
        return body

    def _check_namespace_open(self, rtype: ResourceType, namespace: str, name: str) -> None:
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(rtype.plural, rtype.group, name,
                                   f"unable to create new content in namespace {namespace} because it is being "
                                   "terminated")

    # --- kind-specific preparation and validation ------------------------------------------------------------

    def _prepare(self, rtype: ResourceType, obj: Obj, old: Obj | None) -> None:
        """Server-side field filling that real registries do (defaults, Secret stringData, CRD status)."""
        if rtype.store_key == NAMESPACES:
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            if old is None or not old["metadata"].get("deletionTimestamp"):
                obj["status"] = {"phase": "Active"}
            else:
                obj["status"] = old.get("status", {})
        elif rtype.store_key == ("", "secrets"):
            string_data = obj.pop("stringData", None) or {}
            data = obj.setdefault("data", {}) or {}
            for key, value in data.items():
                try:
                    base64.b64decode(str(value), validate=True)
                except ValueError:
                    raise errors.bad_request(f"illegal base64 data in Secret data[{key!r}]") from None
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            obj["data"] = data
            if not obj.get("type"):
                obj["type"] = "Opaque"
        elif rtype.store_key == CRDS:
            self._prepare_crd(obj, old)
        elif rtype.schema is not None:
            apply_defaults(obj, rtype.schema)
            prune(obj, rtype.schema, root=True)

    def _prepare_crd(self, obj: Obj, old: Obj | None) -> None:
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        if names.get("kind"):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", f"{names['kind']}List")
        for version in spec.get("versions") or []:
            version.setdefault("served", True)
            version.setdefault("storage", len(spec.get("versions")) == 1)
        spec.setdefault("scope", "Namespaced")
        timestamp = meta.now()
        storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
        obj["status"] = {
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found",
                 "lastTransitionTime": timestamp},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": timestamp},
            ],
            "acceptedNames": dict(names),
            "storedVersions": storage,
        }
        if old is not None and old.get("status", {}).get("conditions"):
            obj["status"]["conditions"] = old["status"]["conditions"]

    def _validate(self, rtype: ResourceType, obj: Obj, old: Obj | None) -> None:
        metadata = obj["metadata"]
        name = metadata.get("name", "")
        causes: list[Cause] = []
        if old is None:
            causes += meta.validate_name(name, dns_label=rtype.store_key == NAMESPACES)
        causes += meta.validate_labels(metadata.get("labels"))
        causes += meta.validate_annotations(metadata.get("annotations"))
        if old is not None and old["metadata"].get("deletionTimestamp"):
            added = set(metadata.get("finalizers") or []) - set(old["metadata"].get("finalizers") or [])
            if added:
                causes.append({"reason": "FieldValueForbidden", "field": "metadata.finalizers",
                               "message": "metadata.finalizers: Forbidden: no new finalizers can be added if the "
                                          "object is being deleted, found new finalizers " + repr(sorted(added))})
        if rtype.store_key == CRDS:
            causes += self._crd_causes(obj)
        elif rtype.schema is not None:
            causes += validate(obj, rtype.schema)
        if rtype.scale is not None:
            causes += scale.causes(rtype.scale, obj)
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, name, causes)

    def _crd_causes(self, obj: Obj) -> list[Cause]:
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        causes: list[Cause] = []

        def required(field: str) -> None:
            causes.append({"reason": "FieldValueRequired", "field": field, "message": f"{field}: Required value"})

        if not spec.get("group"):
            required("spec.group")
        if not names.get("plural"):
            required("spec.names.plural")
        if not names.get("kind"):
            required("spec.names.kind")
        if not spec.get("versions"):
            required("spec.versions")
        elif sum(1 for v in spec["versions"] if v.get("storage")) != 1:
            causes.append({"reason": "FieldValueInvalid", "field": "spec.versions",
                           "message": "spec.versions: Invalid value: []: must have exactly one version marked as "
                                      "storage version"})
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append({"reason": "FieldValueNotSupported", "field": "spec.scope",
                           "message": f'spec.scope: Unsupported value: "{spec.get("scope")}": supported values: '
                                      '"Cluster", "Namespaced"'})
        for index, version in enumerate(spec.get("versions") or []):
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            causes += structural_causes(schema, f"spec.versions[{index}].schema.openAPIV3Schema")
            causes += scale.crd_causes(version.get("subresources"), f"spec.versions[{index}].subresources")
        expected = f"{names.get('plural')}.{spec.get('group')}"
        if obj["metadata"].get("name") != expected:
            causes.append({"reason": "FieldValueInvalid", "field": "metadata.name",
                           "message": f'metadata.name: Invalid value: "{obj["metadata"].get("name")}": must be '
                                      'spec.names.plural+"."+spec.group'})
        return causes

    # --- update ----------------------------------------------------------------------------------------------

    def update(self, rtype: ResourceType, namespace: str, name: str, new: Any, subresource: str = "",
               dry_run: bool = False, old: Obj | None = None, require_rv: bool = False) -> Obj:
        """Replace semantics shared by PUT and PATCH (``new`` is the full desired object)."""
        if old is None:
            old = self.get(rtype, namespace, name)
        obj = self._check_body(rtype, new)
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            metadata = obj["metadata"] = {}
        if metadata.get("name") and metadata["name"] != name:
            raise errors.bad_request(f"the name of the object ({metadata['name']}) does not match the name on the "
                                     f"URL ({name})")
        if rtype.namespaced and metadata.get("namespace") and metadata["namespace"] != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on "
                                     "the request")
        rv = metadata.get("resourceVersion")
        if require_rv and not rv and not rtype.builtin:
            raise errors.invalid(rtype.kind, rtype.group, name, [{
                "reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                "message": "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"}])
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rtype.plural, rtype.group, name, errors.STALE)
        if metadata.get("uid") and metadata["uid"] != old["metadata"]["uid"]:
            raise errors.conflict(rtype.plural, rtype.group, name,
                                  f"Precondition failed: UID in precondition: {metadata['uid']}, UID in object "
                                  f"meta: {old['metadata']['uid']}")
        obj = self._apply_subresource(rtype, obj, old, subresource)
        metadata = obj["metadata"]
        metadata["name"] = name
        if rtype.namespaced:
            metadata["namespace"] = namespace
        for field in meta.SYSTEM_FIELDS:
            if field in old["metadata"]:
                metadata[field] = old["metadata"][field]
            else:
                metadata.pop(field, None)
        metadata.pop("managedFields", None)
        metadata.pop("selfLink", None)
        self._prepare(rtype, obj, old)
        self._validate(rtype, obj, old)
        if meta.spec_part(obj, rtype.has_status) != meta.spec_part(old, rtype.has_status):
            metadata["generation"] = old["metadata"].get("generation", 1) + 1
        metadata["resourceVersion"] = old["metadata"]["resourceVersion"]
        if meta.comparable(obj) == meta.comparable(old):
            return old
        if dry_run:
            return obj
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers") and rtype.store_key != NAMESPACES:
            return self.store.commit(rtype.store_key, "DELETED", obj, old)
        stored = self.store.commit(rtype.store_key, "MODIFIED", obj, old)
        if rtype.store_key == CRDS:
            self.registry.install_crd(stored)
        return stored

    def _apply_subresource(self, rtype: ResourceType, obj: Obj, old: Obj, subresource: str) -> Obj:
        if subresource == "status":
            result = {k: v for k, v in old.items() if k != "status"}
            result["metadata"] = dict(old["metadata"])
            if "status" in obj:
                result["status"] = obj["status"]
            return meta.clone(result)
        if subresource and subresource != "scale":  # a scale write is a main-resource write built from ``old``
            raise errors.not_found(f"{rtype.plural}/{subresource}", rtype.group, obj["metadata"].get("name", ""))
        if rtype.has_status and rtype.store_key not in (NAMESPACES, CRDS):
            if "status" in old:
                obj["status"] = meta.clone(old["status"])
            else:
                obj.pop("status", None)
        return obj

    # --- delete ----------------------------------------------------------------------------------------------

    def delete(self, rtype: ResourceType, namespace: str, name: str, options: dict[str, Any],
               dry_run: bool = False) -> Obj:
        old = self.get(rtype, namespace, name)
        preconditions = options.get("preconditions") or {}
        if preconditions.get("uid") and preconditions["uid"] != old["metadata"]["uid"]:
            raise errors.conflict(rtype.plural, rtype.group, name,
                                  f"Precondition failed: UID in precondition: {preconditions['uid']}, UID in "
                                  f"object meta: {old['metadata']['uid']}")
        if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != old["metadata"][
                "resourceVersion"]:
            raise errors.conflict(rtype.plural, rtype.group, name,
                                  f"Precondition failed: ResourceVersion in precondition: "
                                  f"{preconditions['resourceVersion']}, ResourceVersion in object meta: "
                                  f"{old['metadata']['resourceVersion']}")
        if dry_run:
            return old
        if old["metadata"].get("deletionTimestamp"):
            return old
        policy = options.get("propagationPolicy") or ("Orphan" if options.get("orphanDependents") else "Background")
        finalizers = list(old["metadata"].get("finalizers") or [])
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if rtype.store_key == NAMESPACES or finalizers:
            obj = {**old, "metadata": {**old["metadata"], "deletionTimestamp": meta.now(),
                                       "deletionGracePeriodSeconds": 0}}
            if finalizers:
                obj["metadata"]["finalizers"] = finalizers
            if rtype.store_key == NAMESPACES:
                obj["status"] = {"phase": "Terminating"}
            stored = self.store.commit(rtype.store_key, "MODIFIED", obj, old)
            for hook in self.on_delete_started:
                hook(rtype, stored, policy)
            return stored
        return self.remove(rtype, old)

    def remove(self, rtype: ResourceType, old: Obj) -> Obj:
        """Remove ``old`` from the store now (a DELETED event carries the deletion's resourceVersion)."""
        obj = {**old, "metadata": dict(old["metadata"])}
        removed = self.store.commit(rtype.store_key, "DELETED", obj, old)
        if rtype.store_key == CRDS:
            for key in {served.store_key for served in self.registry.remove_crd(old["metadata"]["name"])}:
                self.store.drop_kind(key)
                self.store.close_watchers(key)
        return removed

    def delete_collection(self, rtype: ResourceType, namespace: str | None, predicate: Predicate,
                          options: dict[str, Any], dry_run: bool = False) -> list[Obj]:
        deleted = []
        for obj in list(self.store.iter(rtype.store_key, namespace)):
            if predicate is None or predicate(obj):
                metadata = obj["metadata"]
                deleted.append(self.delete(rtype, metadata.get("namespace", ""), metadata["name"], options,
                                           dry_run))
        return deleted

    def kinds_in_namespaces(self) -> list[ResourceType]:
        """One served type per stored namespaced kind (for namespace cleanup)."""
        seen: dict[tuple[str, str], ResourceType] = {}
        for rtype in self.registry.types.values():
            if rtype.namespaced:
                seen.setdefault(rtype.store_key, rtype)
        return list(seen.values())
