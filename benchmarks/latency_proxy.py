"""A TCP proxy that delays every chunk by D ms in each direction, in order: Redis "a network hop away".

Every Redis command of the stack crosses loopback, where a round trip costs microseconds; across nodes it costs
0.2–1 ms, and then the number of *sequential* round trips on a path decides its latency. The benchmark puts this
proxy between the stack and its ``redis-server`` (``claims.py --redis-latency-ms D``): each chunk read from one
side is written to the other D ms after it was read, chunks of one direction keep their order, and the two
directions are independent, so a request/reply round trip costs 2·D and a pipeline costs 2·D once.

    python -m benchmarks.latency_proxy --target 127.0.0.1:6379 --delay-ms 1   # prints "listening on <port>"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
import time
from collections.abc import Awaitable, Callable

CHUNK = 65536


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    """Read chunks as they come; a second task writes each one ``delay_s`` after it was read, in order."""
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        loop = asyncio.get_running_loop()
        while True:
            due, data = await queue.get()
            if not data:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    sender = asyncio.create_task(deliver())
    loop = asyncio.get_running_loop()
    try:
        while True:
            data = await reader.read(CHUNK)
            queue.put_nowait((loop.time() + delay_s, data))
            if not data:
                break
        await sender
    except (ConnectionError, OSError):
        sender.cancel()
    finally:
        with contextlib.suppress(Exception):
            writer.close()


def handler(target_host: str, target_port: int, delay_s: float, log: Callable[[str], None] | None = None
            ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """Each accepted client gets its own connection to the target; ``log`` hears ``connection P -> Q`` (the
    client's port, the port the target sees), so a MONITOR line can be traced back to its client."""
    async def serve(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_writer.close()
            return
        if log is not None:
            log(f"connection {client_writer.get_extra_info('peername')[1]} -> "
                f"{server_writer.get_extra_info('sockname')[1]}")
        await asyncio.gather(_pump(client_reader, server_writer, delay_s),
                             _pump(server_reader, client_writer, delay_s), return_exceptions=True)

    return serve


async def start(target_host: str, target_port: int, delay_ms: float, port: int = 0,
                log: Callable[[str], None] | None = None) -> asyncio.Server:
    """The proxy listening on 127.0.0.1:``port`` (0: any free port; read it from ``server.sockets``)."""
    return await asyncio.start_server(handler(target_host, target_port, delay_ms / 1000.0, log), "127.0.0.1", port)


def parse_connections(lines: list[str]) -> dict[int, int]:
    """``connection P -> Q`` lines (the proxy's output) as {client port P: port Q the target sees}."""
    found = (re.match(r"connection (\d+) -> (\d+)", line) for line in lines)
    return {int(m.group(1)): int(m.group(2)) for m in found if m}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="HOST:PORT to forward to (redis-server)")
    parser.add_argument("--delay-ms", type=float, required=True, help="delay of every chunk, each direction")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    args = parser.parse_args(argv)
    host, _, port = args.target.rpartition(":")

    async def run() -> None:
        server = await start(host or "127.0.0.1", int(port), args.delay_ms, args.port,
                             log=lambda line: print(line, flush=True))
        print(f"listening on {server.sockets[0].getsockname()[1]} (delay {args.delay_ms} ms, "
              f"since {time.strftime('%H:%M:%S')})", flush=True)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
