"""CPU per kombu publish on the project's Redis transport (workers.compat), direct and fanout.

Task events are fanout publishes and every task is a direct one; kombu builds a redis-py client per call unless the
channel shares one (``_SharesItsClient``). Starts its own redis-server on a free port.

    .venv/bin/python benchmarks/kombu_publish.py [--n 3000]
"""

from __future__ import annotations

import argparse
import time

from kombu import Connection, Exchange, Producer, Queue

from stack.redis_server import RedisServer


def cpu_per_publish_us(producer: Producer, n: int, **options: object) -> float:
    for _ in range(min(200, n)):  # warm-up: declarations, script loads, connection
        producer.publish({"x": 1}, **options)
    started = time.process_time()
    for _ in range(n):
        producer.publish({"x": 1}, **options)
    return (time.process_time() - started) / n * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="publishes per kind (default 3000)")
    args = parser.parse_args()
    with RedisServer() as server, Connection(server.url, transport="workers.compat:Transport") as connection:
        channel = connection.channel()
        fanout = Producer(channel, exchange=Exchange("celeryev", type="fanout"))
        queue = Queue("bench", Exchange("bench", type="direct"), routing_key="bench")
        direct = Producer(channel, exchange=queue.exchange)
        queue(channel).declare()
        print(f"fanout publish: {cpu_per_publish_us(fanout, args.n, routing_key='w.e'):.0f} µs CPU")
        print(f"direct publish: {cpu_per_publish_us(direct, args.n, routing_key='bench'):.0f} µs CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
