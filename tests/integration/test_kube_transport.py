"""The API transport over real HTTP, against a small recording server: where a request goes when the configured
host has a path prefix, that a redirect is still followed, and that a proxy still gets every request (the direct
connection pool is used only when no proxy is configured)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s_client

from poolboy.kube.transport import Transport


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with ``{"path": <request target>, "body": <request body>}``; a target under
    ``/moved`` is redirected to ``/new`` once."""

    targets: list[str]

    def _answer(self) -> None:
        self.targets.append(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        if "/moved" in self.path:
            self.send_response(307)
            self.send_header("Location", self.path.replace("/moved", "/new"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        payload = json.dumps({"path": self.path, "body": body}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[tuple[str, list[str]]]:
    targets: list[str] = []
    handler = type("Handler", (_Recorder,), {"targets": targets})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", targets
    httpd.shutdown()
    httpd.server_close()


def _transport(host: str, proxy: str | None = None) -> Transport:
    configuration = k8s_client.Configuration()
    configuration.host = host
    configuration.proxy = proxy
    return Transport(k8s_client.ApiClient(configuration), timeout=5)


def test_requests_keep_the_hosts_path_prefix(server) -> None:
    url, targets = server
    transport = _transport(url + "/k8s/clusters/c-1")
    reply = transport.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "a"}},
                              query=[("dryRun", "All")])
    assert reply["path"] == "/k8s/clusters/c-1/api/v1/namespaces?dryRun=All"
    assert json.loads(reply["body"]) == {"metadata": {"name": "a"}}
    assert transport.request("GET", "/api/v1/namespaces/b")["path"] == "/k8s/clusters/c-1/api/v1/namespaces/b"
    assert len(targets) == 2


def test_a_redirect_is_followed(server) -> None:
    url, targets = server
    reply = _transport(url).request("GET", "/moved/api/v1/namespaces")
    assert reply["path"] == "/new/api/v1/namespaces"
    assert targets == ["/moved/api/v1/namespaces", "/new/api/v1/namespaces"]


def test_behind_a_proxy_every_request_goes_to_the_proxy_in_absolute_form(server) -> None:
    """The recording server plays the proxy: an HTTP proxy receives the whole URL as the request target."""
    url, targets = server
    reply = _transport("http://api.example.invalid:6443", proxy=url).request("GET", "/api/v1/namespaces")
    assert reply["path"] == "http://api.example.invalid:6443/api/v1/namespaces"
    assert targets == [reply["path"]]
