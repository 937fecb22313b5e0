"""The token renewal of ``poolboy dev --service-accounts`` (:mod:`stack.service_accounts`), against a recording
stand-in for the control plane: a token is renewed at 80% of its lifetime, written over the mounted file, and the
binding of the token before the previous one (long expired) is deleted; an API server that is away is retried."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from stack import service_accounts
from stack.service_accounts import ServiceAccountIdentities


class RecordingControlPlane:
    """Answers the two requests the renewer makes (a Secret, a TokenRequest) and records every request."""

    url = "https://127.0.0.1:6443"

    def __init__(self, ca_file: Path) -> None:
        self.ca_file = ca_file
        self.calls: list[tuple[str, str]] = []
        self.away = False
        self._tokens = 0

    def request(self, method: str, path: str, body: Any = None) -> Any:
        if self.away:
            raise ConnectionRefusedError("the API server is away")
        self.calls.append((method, path))
        if path.endswith("/token"):
            self._tokens += 1
            return {"status": {"token": f"token-{self._tokens}"}}
        return {"metadata": {"uid": "uid", "name": (body or {}).get("metadata", {}).get("name")}}


def identities(tmp_path: Path) -> tuple[ServiceAccountIdentities, RecordingControlPlane]:
    (tmp_path / "ca.crt").write_text("CA")
    cluster = RecordingControlPlane(tmp_path / "ca.crt")
    return ServiceAccountIdentities(cluster, "poolboy", "example.com", tmp_path / "sa"), cluster


def test_a_token_is_mounted_as_a_kubelet_mounts_it(tmp_path: Path) -> None:
    ids, _ = identities(tmp_path)
    ids.project("worker")
    mount = ids.mount("worker")
    assert {p.name: p.read_text() for p in mount.iterdir()} == {"token": "token-1", "ca.crt": "CA",
                                                                 "namespace": "poolboy"}
    env = ids.env("worker")
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("127.0.0.1", "6443")
    assert env["POOLBOY_SERVICE_ACCOUNT_DIR"] == str(mount) and not Path(env["KUBECONFIG"]).exists()


def test_tokens_are_renewed_at_80_percent_and_old_bindings_deleted(tmp_path: Path) -> None:
    ids, cluster = identities(tmp_path)
    ids.project("worker")
    first = ids.tokens["worker"].binding
    now = time.monotonic()
    assert ids.renew_due(now) == []  # young: nothing to do
    later = now + service_accounts.RENEW_AT * service_accounts.TOKEN_SECONDS + 1
    assert ids.renew_due(later) == ["worker"]
    assert (ids.mount("worker") / "token").read_text() == "token-2"
    second = ids.tokens["worker"].binding
    assert ("DELETE", f"/api/v1/namespaces/poolboy/secrets/{first}") not in cluster.calls  # still valid a while
    assert ids.renew_due(later + service_accounts.TOKEN_SECONDS) == ["worker"]
    assert ("DELETE", f"/api/v1/namespaces/poolboy/secrets/{first}") in cluster.calls  # expired long ago
    assert ("DELETE", f"/api/v1/namespaces/poolboy/secrets/{second}") not in cluster.calls


def test_an_api_server_away_is_asked_again_on_the_next_tick(tmp_path: Path) -> None:
    ids, cluster = identities(tmp_path)
    ids.project("worker")
    due = time.monotonic() + service_accounts.TOKEN_SECONDS
    cluster.away = True
    assert ids.renew_due(due) == []
    assert (ids.mount("worker") / "token").read_text() == "token-1"  # the old token stays mounted
    cluster.away = False
    assert ids.renew_due(due) == ["worker"]
