"""A loopback reverse proxy in front of kube-apiserver that injects faults and latency, the real cluster's
equivalent of devcluster's ``/_devcluster/faults``.

It terminates TLS with a certificate of the cluster's CA, so clients keep verifying the server, and passes the
caller's identity on the way the API server's aggregation layer does: a client certificate becomes the
``X-Remote-User`` / ``X-Remote-Group`` headers, sent with the proxy's own front-proxy certificate (a CA of its own,
trusted only for those headers); a bearer token goes through untouched, for the API server to authenticate. Watches
stream through chunk by chunk. ``PUT /_proxy/faults`` takes devcluster's fault JSON (:class:`devcluster.faults.Faults`):
error rate and codes, Retry-After, latency, verbs and kinds; ``{}`` clears it. With ``"after_commit": true`` a faulted
request is forwarded first and, when kube-apiserver answered it with a success, that answer is dropped and the error
sent instead: the write is in etcd, the client told it failed (an answer lost after the commit).

    python -m controlplane.proxy --target https://127.0.0.1:6443 --port 7443 --pki DIR  # prints "proxy ready at URL"
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from multidict import CIMultiDict

from devcluster.errors import ApiError
from devcluster.faults import Faults

#: headers a client may not set: the proxy alone says who the caller is
IDENTITY_HEADERS = ("x-remote-user", "x-remote-group")
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
               "proxy-authenticate", "host", "content-length"}
#: the verbs of read requests by method, and of writes
VERB_OF_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def request_target(path: str, query: dict[str, str], method: str) -> tuple[str, str, str] | None:
    """(verb, plural, group) of an API request path, or None for discovery and everything that is not one."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if rest[:1] == ["watch"]:
        rest, watching = rest[1:], True
    else:
        watching = query.get("watch") in ("1", "true")
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]  # a namespaced resource; "namespaces/<ns>" alone stays a namespace
    if not rest:
        return None
    named = len(rest) >= 2
    if watching:
        verb = "watch"
    elif method == "GET":
        verb = "get" if named else "list"
    elif method == "DELETE" and not named:
        verb = "deletecollection"
    else:
        verb = VERB_OF_METHOD.get(method, method.lower())
    return verb, rest[0], group


class FaultProxy:
    def __init__(self, target: str, upstream_ssl: ssl.SSLContext) -> None:
        self.target = target.rstrip("/")
        self.upstream_ssl = upstream_ssl
        self.faults = Faults()
        self.session: aiohttp.ClientSession | None = None

    async def start_session(self, _app: web.Application) -> None:
        connector = aiohttp.TCPConnector(ssl=self.upstream_ssl, limit=0)
        self.session = aiohttp.ClientSession(connector=connector, auto_decompress=False,
                                             timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))

    async def close_session(self, _app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/_proxy/faults":
            return await self.admin(request)
        target = request_target(request.path, dict(request.query), request.method)
        if target is not None and self.faults.active and self.faults.applies(*target, kind=""):
            if self.faults.latency_ms:
                await asyncio.sleep(self.faults.latency_ms / 1000)
            error = self.faults.pick_error()
            if error is not None:
                if self.faults.serves_first(target[0]):
                    return await self.forward(request, replace=error)
                return error_response(error)
        return await self.forward(request)

    async def admin(self, request: web.Request) -> web.Response:
        if request.method == "PUT":
            raw = await request.read()
            self.faults = Faults.from_json(orjson.loads(raw) if raw.strip() else {})
        return web.Response(body=orjson.dumps(self.faults.to_json()), content_type="application/json")

    async def forward(self, request: web.Request, replace: ApiError | None = None) -> web.StreamResponse:
        """Pass the request to kube-apiserver and stream its answer back; a success is answered with ``replace``
        instead when given (commit then fail)."""
        assert self.session is not None
        headers = CIMultiDict((k, v) for k, v in request.headers.items()
                              if k.lower() not in HOP_HEADERS and not k.lower().startswith(IDENTITY_HEADERS))
        user, groups = peer_identity(request)
        if user:
            headers["X-Remote-User"] = user
            for group in groups:
                headers.add("X-Remote-Group", group)
        body = await request.read()
        # a body without a Content-Type goes on without one (the API server reads it as JSON), not as aiohttp's
        # application/octet-stream
        async with self.session.request(request.method, self.target + request.path_qs, headers=headers,
                                        data=body or None, allow_redirects=False,
                                        skip_auto_headers=("Content-Type",)) as upstream:
            if replace is not None and 200 <= upstream.status < 300:
                await upstream.read()  # the API server has answered: the write is stored
                return error_response(replace)
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in HOP_HEADERS:
                    response.headers.add(key, value)
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response


def error_response(error: ApiError) -> web.Response:
    return web.Response(status=error.code, body=orjson.dumps(error.status()), content_type="application/json",
                        headers=error.headers)


def peer_identity(request: web.Request) -> tuple[str, list[str]]:
    """The client certificate's Common Name and Organizations (user and groups, as the API server reads them)."""
    transport = request.transport
    cert: Any = transport.get_extra_info("peercert") if transport is not None else None
    if not cert:
        return "", []
    user, groups = "", []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    return user, groups


def ssl_contexts(pki: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(the proxy's server context: the serving certificate, client certificates of the cluster CA optional;
    its client context to the API server: the cluster CA, the front-proxy certificate)."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    server.load_verify_locations(pki / "ca.crt")
    server.verify_mode = ssl.CERT_OPTIONAL
    client = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    client.load_cert_chain(pki / "front-proxy-client.crt", pki / "front-proxy-client.key")
    return server, client


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m controlplane.proxy", description=__doc__)
    parser.add_argument("--target", required=True, help="the API server's URL")
    parser.add_argument("--port", type=int, required=True, help="the port to listen on, on 127.0.0.1")
    parser.add_argument("--pki", type=Path, required=True, help="the control plane's certificate directory")
    args = parser.parse_args(argv)
    server_ssl, client_ssl = ssl_contexts(args.pki)
    proxy = FaultProxy(args.target, client_ssl)
    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.on_startup.append(proxy.start_session)
    app.on_cleanup.append(proxy.close_session)
    app.router.add_route("*", "/{tail:.*}", proxy.handle)

    runner = web.AppRunner(app)

    async def serve() -> None:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.port, ssl_context=server_ssl, reuse_address=True).start()
        print(f"proxy ready at https://127.0.0.1:{args.port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
