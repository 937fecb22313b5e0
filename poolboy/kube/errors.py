"""The API's errors as a small hierarchy whose ``transient`` flag tells the engine whether a retry can help, and
client-go's retry-on-conflict pattern."""

from __future__ import annotations

import functools

import tenacity


class ApiError(Exception):
    """A failed API request. ``transient`` is True when retrying later can succeed (429, 5xx, 409, network)."""

    transient: bool = False

    def __init__(self, status: int, reason: str = "", message: str = "", body: dict | None = None,
                 retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message or reason
        self.body = body
        self.retry_after = retry_after
        super().__init__(f"{status} {reason}: {self.message}" if status else f"{reason}: {self.message}")


class BadRequest(ApiError):
    pass


class Unauthorized(ApiError):
    """401: the credentials were refused. A rotated service-account token is read again from its file (at most a
    minute later), so a retry can succeed: transient."""

    transient = True


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class AlreadyExists(ApiError):
    """409 on create: the name is taken. With deterministic names this means "adopt", not "retry"."""


class Conflict(ApiError):
    """409 on a write with a stale resourceVersion: re-read, recompute, write again."""

    transient = True


class Gone(ApiError):
    """410: the resourceVersion of a watch or a list continuation is too old; re-list."""


class Invalid(ApiError):
    """422: the object failed validation, or a JSON-patch ``test`` op did not match."""


class Throttled(ApiError):
    transient = True


class ServerError(ApiError):
    transient = True


class NetworkError(ApiError):
    """No HTTP answer at all: connection refused or reset, timeout, TLS failure (status 0)."""

    transient = True


class ApiMissing(ApiError):
    """The group/version or the kind is not served: permanent until someone installs the API."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 410: Gone, 422: Invalid, 429: Throttled,
}


def error_for(status: int, body: dict | None, fallback_reason: str = "",
               retry_after_header: str | None = None) -> ApiError:
    """Map an HTTP status and a ``Status`` body to the matching :class:`ApiError` subclass."""
    body = body if isinstance(body, dict) else None
    reason = (body or {}).get("reason") or fallback_reason or ""
    message = (body or {}).get("message") or reason
    retry_after = retry_after_of(retry_after_header, body)
    cls: type[ApiError]
    if status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif status >= 500:
        cls = ServerError
    elif status == 0:
        cls = NetworkError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason, message, body, retry_after)


def retry_after_of(header: str | None, body: dict | None) -> float | None:
    if header:
        try:
            return float(header)
        except ValueError:
            pass
    seconds = ((body or {}).get("details") or {}).get("retryAfterSeconds")
    return float(seconds) if seconds else None


# --- resources ---------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def conflict_policy(attempts: int = 5) -> tenacity.Retrying:
    """Client-go's retry-on-conflict, as ``conflict_policy()(fn, *args)``: run ``fn`` again (it must re-read what it
    writes) while it raises :class:`Conflict`.

    The short jittered wait spreads competing writers apart; after ``attempts`` the last Conflict propagates so the
    engine can requeue. Made once per number of attempts: every reconcile runs under it, and tenacity keeps each
    call's state per thread, so concurrent runs share it. Called directly (not through a helper of this module), so
    a reconcile's stack goes from the preamble into tenacity and back into the preamble's own step.
    """
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(Conflict),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_random(0.005, 0.05),
        reraise=True,
    )
