"""Fault injection for tests of retry/backoff paths: random error codes, Retry-After, added latency, optionally
restricted to verbs and kinds. Never applies to ``/_devcluster/*`` or discovery; watches only when asked.

``after_commit`` makes the faults "commit then fail": the request is served first and, when it succeeded, its
answer is replaced by the error, so a write is stored while the client is told it failed (an API server whose answer
is lost after etcd committed). A watch never starts this way: it gets the error before it is served."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from devcluster.errors import REASON_BY_CODE, ApiError

MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error injected by devcluster",
    503: "The server is currently unable to handle the request (injected by devcluster)",
    504: "The server was unable to return a response in the time allotted (injected by devcluster)",
    409: "Operation cannot be fulfilled: the object has been modified (injected by devcluster)",
}


@dataclass
class Faults:
    error_rate: float = 0.0
    codes: list[int] = field(default_factory=lambda: [500])
    retry_after: int | None = None
    latency_ms: float = 0.0
    verbs: list[str] | None = None
    kinds: list[str] | None = None
    include_watch: bool = False
    #: serve the request, then answer the error instead of its success (see the module docstring)
    after_commit: bool = False

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Faults:
        return cls(
            error_rate=float(body.get("error_rate", 0.0)), codes=[int(c) for c in body.get("codes") or [500]],
            retry_after=body.get("retry_after"), latency_ms=float(body.get("latency_ms", 0.0)),
            verbs=body.get("verbs"), kinds=body.get("kinds"), include_watch=bool(body.get("include_watch")),
            after_commit=bool(body.get("after_commit")),
        )

    def to_json(self) -> dict[str, Any]:
        return {"error_rate": self.error_rate, "codes": self.codes, "retry_after": self.retry_after,
                "latency_ms": self.latency_ms, "verbs": self.verbs, "kinds": self.kinds,
                "include_watch": self.include_watch, "after_commit": self.after_commit}

    @property
    def active(self) -> bool:
        return self.error_rate > 0 or self.latency_ms > 0

    def applies(self, verb: str, plural: str, group: str, kind: str) -> bool:
        if verb == "watch" and not self.include_watch and not (self.verbs and "watch" in self.verbs):
            return False
        if self.verbs and verb not in self.verbs:
            return False
        if self.kinds:
            names = {plural, kind, f"{plural}.{group}" if group else plural, kind.lower()}
            if not names & set(self.kinds):
                return False
        return True

    def serves_first(self, verb: str) -> bool:
        """Whether a picked error replaces the answer of the request served (``after_commit``), not the request."""
        return self.after_commit and verb != "watch"

    def pick_error(self) -> ApiError | None:
        if self.error_rate <= 0 or random.random() >= self.error_rate:
            return None
        code = random.choice(self.codes)
        headers = {"Retry-After": str(self.retry_after)} if self.retry_after is not None and code in (
            429, 503) else {}
        if code == 429 and "Retry-After" not in headers:
            headers["Retry-After"] = "1"
        error = ApiError(code, REASON_BY_CODE.get(code, "InternalError"),
                         MESSAGES.get(code, f"error {code} injected by devcluster"), headers=headers)
        if self.retry_after is not None:
            error.details = {"retryAfterSeconds": int(self.retry_after)}
        return error
