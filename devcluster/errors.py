"""Kubernetes ``Status`` failure bodies, raised as exceptions so every layer can refuse a request the same way.

Clients (the official ``kubernetes`` client, kubectl, Kopf) branch on ``code`` and ``reason``; the message text
follows kube-apiserver's wording so humans reading test failures recognise it.
"""

from __future__ import annotations

from typing import Any

REASON_BY_CODE = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Gone", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}


class ApiError(Exception):
    """A request refused with a kube-apiserver ``Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message,
        }
        if self.reason:  # kube-apiserver omits an unknown reason (errors that were not a Status)
            body["reason"] = self.reason
        body["code"] = self.code
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(extra)
    return details


class NotServed(ApiError):
    """A 404 for a path no API serves (unknown group, version, resource or subresource), as opposed to a missing
    object of a served resource; counted by path so tests can see what a client asked for in vain."""


def not_served() -> NotServed:
    return NotServed(404, "NotFound", "the server could not find the requested resource", {})


def unknown_subresource(plural: str, group: str, name: str) -> NotServed:
    """What the CRD handler answers for a subresource its CRD version does not declare: the object's NotFound."""
    found = not_found(plural, group, name)
    return NotServed(found.code, found.reason, found.message, found.details)


def resource_label(plural: str, group: str) -> str:
    """``configmaps`` or ``widgets.example.com`` — how kube-apiserver names a resource in messages."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{resource_label(plural, group)} "{name}" not found',
                    _details(name, group, plural))


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{resource_label(plural, group)} "{name}" already exists',
                    _details(name, group, plural))


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {resource_label(plural, group)} "{name}": {why}',
                    _details(name, group, plural))


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid; ``causes`` are ``{reason, message, field}`` with message ``field: Detail``."""
    label = f"{kind}.{group}" if group else kind
    texts = [c["message"] for c in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    wire_causes = [{"reason": c["reason"], "message": c["message"].split(": ", 1)[-1], "field": c["field"]}
                   for c in causes]
    return ApiError(422, "Invalid", f'{label} "{name}" is invalid: {joined}',
                    _details(name, group, kind, causes=wire_causes))


def patch_not_applicable() -> ApiError:
    """422 for a JSON patch that does not apply (a failed ``test``, a missing path): kube-apiserver answers with a
    generic Status (``NewGenericServerResponse``), so the patch library's own message never reaches the client."""
    return ApiError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def internal_error(message: str) -> ApiError:
    """500 as ``NewInternalError`` words it."""
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format - accepted media types include: '
                    f'{", ".join(accepted)}', {})


def forbidden(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'{resource_label(plural, group)} "{name}" is forbidden: {why}',
                    _details(name, group, plural))


def success(name: str, group: str, plural: str, uid: str = "") -> dict[str, Any]:
    """The ``Status`` body kube-apiserver returns for deletes of kinds that do not echo the object."""
    details = _details(name, group, plural)
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
