"""The benchmark's Redis latency proxy, in front of a real redis-server: replies come back intact, in order,
and a round trip through it takes at least twice the configured delay (once each way)."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio

from benchmarks import latency_proxy

DELAY_MS = 20.0


async def _through_proxy(redis_port: int, delay_ms: float, work):
    server = await latency_proxy.start("127.0.0.1", redis_port, delay_ms)
    port = server.sockets[0].getsockname()[1]
    client = redis.asyncio.Redis(host="127.0.0.1", port=port)
    try:
        return await work(client)
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()


def test_round_trip_works_and_is_delayed(redis_server) -> None:
    port = int(redis_server.url.rsplit(":", 1)[1].split("/")[0])

    async def work(client):
        await client.ping()  # connect outside the timed round trip
        began = time.monotonic()
        await client.set("proxy:test", "value")
        elapsed = time.monotonic() - began
        return elapsed, await client.get("proxy:test")

    elapsed, value = asyncio.run(_through_proxy(port, DELAY_MS, work))
    assert value == b"value"
    assert elapsed >= 2 * DELAY_MS / 1000


def test_pipeline_keeps_order_and_large_values_intact(redis_server) -> None:
    port = int(redis_server.url.rsplit(":", 1)[1].split("/")[0])
    big = b"x" * 300_000  # several chunks each way

    async def work(client):
        pipe = client.pipeline(transaction=False)
        for index in range(50):
            pipe.rpush("proxy:list", index)
        pipe.set("proxy:big", big)
        pipe.get("proxy:big")
        pipe.lrange("proxy:list", 0, -1)
        pipe.delete("proxy:list", "proxy:big")
        return await pipe.execute()

    replies = asyncio.run(_through_proxy(port, 1.0, work))
    assert replies[49] == 50
    assert replies[51] == big
    assert replies[52] == [str(i).encode() for i in range(50)]
