"""Redis compiles every Lua script of ``redisscripts/`` as declared, alone and all of them combined in one EVALSHA
(the declarations themselves are checked against their files in ``tests/unit/test_redisscripts.py``)."""

from __future__ import annotations

import hashlib

import redis

from redisscripts.combined import combined_call
from stack.testing import RedisServer
from tests.redis_scripts import declared_scripts


def test_redis_compiles_every_script_and_all_of_them_combined(redis_server: RedisServer) -> None:
    declared = declared_scripts()
    client = redis.Redis.from_url(redis_server.url)
    for name, script in sorted(declared.items()):
        assert client.script_load(script.source) == hashlib.sha1(script.source.encode()).hexdigest(), name
    registered = [client.register_script(script.source) for _, script in sorted(declared.items())]
    combined, _, _ = combined_call([(script, [], []) for script in registered])
    assert client.script_load(combined.script) == combined.sha


