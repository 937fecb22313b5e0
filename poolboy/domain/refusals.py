"""A request the API server refuses for want of a grant (403 Forbidden) is the installer's to fix, not a passing
fault: it becomes a :class:`PermanentError`, so the object shows it (a ``Forbidden`` condition and Event where its
status can still be written), the worker logs it once, and the object is re-checked slowly rather than retried."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from poolboy import kube
from poolboy.result import PermanentError

REASON = "Forbidden"


def permanent(error: kube.Forbidden) -> PermanentError:
    """The refusal in the API server's own words (who may not do what, where), and where the grants live."""
    return PermanentError(REASON, f"The API server refused Poolboy's request: {error.message}. Poolboy's "
                                  "ServiceAccounts get their grants from the Helm chart's RBAC (managedResources "
                                  "for the kinds providers create).")


@contextmanager
def as_permanent() -> Iterator[None]:
    """Turn a 403 raised inside the block into :func:`permanent`'s error."""
    try:
        yield
    except kube.Forbidden as error:
        raise permanent(error) from error
