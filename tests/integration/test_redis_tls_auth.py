"""Redis with TLS (``rediss://``, CA and client certificate settings) and a password, through the one client factory:
a real redis-server serving TLS with client-certificate authentication and ``requirepass``, a real worker running
reconciles over it, and the refusals that show the CA is checked and the password is needed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from engine import redis_client
from poolboy.settings import Settings
from stack.testing import RedisServer, WorkerProcess, free_port
from tests.integration import engine_reconcilers as er
from tests.integration.engine_settings import ENV, RECONCILERS
from tests.waiting import wait_for
from workers import broker
from workers.messages import enqueuer as celery_enqueuer

pytestmark = pytest.mark.openssl

PASSWORD = "s3cret pass"


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(directory: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by the CA."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=test-ca", cwd=directory)
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}", cwd=directory)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "2", "-extfile", "san.cnf", cwd=directory)


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    certs = tmp_path_factory.mktemp("certs")
    make_certificates(certs)
    tls_port = free_port()
    args = ["--tls-port", str(tls_port), "--tls-cert-file", str(certs / "server.crt"),
            "--tls-key-file", str(certs / "server.key"), "--tls-ca-cert-file", str(certs / "ca.crt"),
            "--tls-auth-clients", "yes", "--requirepass", PASSWORD]
    with RedisServer(args=args):
        yield f"rediss://127.0.0.1:{tls_port}/0", certs


def tls_env(url: str, certs: Path, **extra: str) -> dict[str, str]:
    return {"POOLBOY_REDIS_URL": url, "POOLBOY_REDIS_PASSWORD": PASSWORD,
            "POOLBOY_REDIS_TLS_CA_FILE": str(certs / "ca.crt"),
            "POOLBOY_REDIS_TLS_CERT_FILE": str(certs / "client.crt"),
            "POOLBOY_REDIS_TLS_KEY_FILE": str(certs / "client.key"), **extra}


def test_a_worker_runs_reconciles_over_tls_with_a_password(tls_redis: tuple[str, Path]) -> None:
    url, certs = tls_redis
    env = tls_env(url, certs)
    settings = Settings.from_env(env)
    r = redis_client.client(settings, decode_responses=True)
    r.flushall()
    app = broker.probe_app(settings)
    enqueuer = celery_enqueuer(app, settings)
    with WorkerProcess(url, ["claims"], 1, reconcilers=RECONCILERS, env={**ENV, **env}) as worker:
        assert enqueuer.add("claim/tls/a") == "published"
        wait_for(lambda: er.completed(r, "claim/tls/a") == 1, 20, message=f"run over TLS\n{worker.log()[-3000:]}")
    app.close()


def test_the_ca_is_checked_and_the_password_is_needed(tls_redis: tuple[str, Path], tmp_path: Path) -> None:
    url, certs = tls_redis
    other_ca = tmp_path / "other"
    other_ca.mkdir()
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=other-ca", cwd=other_ca)
    wrong_ca = Settings.from_env(tls_env(url, certs, POOLBOY_REDIS_TLS_CA_FILE=str(other_ca / "ca.crt")))
    with pytest.raises(redis.ConnectionError, match="certificate verify failed"):
        redis_client.client(wrong_ca).ping()
    no_password = Settings.from_env(tls_env(url, certs, POOLBOY_REDIS_PASSWORD=""))
    with pytest.raises(redis.AuthenticationError):
        redis_client.client(no_password).ping()
    assert redis_client.client(Settings.from_env(tls_env(url, certs))).ping()
