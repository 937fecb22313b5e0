"""The translation of the Redis settings into redis-py options (:mod:`engine.redis_client`) and kombu's and redbeat's
(:mod:`workers.broker`) (pure)."""

from __future__ import annotations

import ssl

import pytest
from redis.sentinel import SentinelConnectionPool

from engine import redis_client
from poolboy.settings import Settings
from workers import broker

SENTINELS = "sentinel://10.0.0.1:26379;sentinel://10.0.0.2:26380;sentinel://10.0.0.3"


def settings(url: str, **values: object) -> Settings:
    return Settings(redis_url=url, **values)  # type: ignore[arg-type]


def test_plain_url_passes_through() -> None:
    s = settings("redis://127.0.0.1:6380/2")
    endpoint = redis_client.parse(s)
    assert not endpoint.is_sentinel and endpoint.db == 2
    assert broker.celery_options(s)["broker_url"] == "redis://127.0.0.1:6380/2"
    assert "broker_use_ssl" not in broker.celery_options(s)
    assert broker.redbeat_options(s)["redbeat_redis_url"] == "redis://127.0.0.1:6380/2"


def test_sentinel_url_lists_every_sentinel_with_the_default_port() -> None:
    endpoint = redis_client.parse(settings(SENTINELS + "/3"))
    assert endpoint.sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26380), ("10.0.0.3", 26379))
    assert endpoint.db == 0  # the database comes from the first URL only
    assert redis_client.parse(settings("sentinel://h:1/4;sentinel://g:2")).db == 4


def test_sentinel_celery_options_name_the_master() -> None:
    s = settings(SENTINELS, redis_sentinel_master="pool", redis_sentinel_password="s3")
    options = broker.celery_options(s)
    assert options["broker_url"] == SENTINELS
    transport = options["broker_transport_options"]
    assert transport["master_name"] == "pool"
    assert transport["sentinel_kwargs"]["password"] == "s3"


def test_sentinel_redbeat_options() -> None:
    s = settings("sentinel://a:1/5;sentinel://b:2", redis_sentinel_master="pool", redis_password="pw")
    options = broker.redbeat_options(s)
    assert options["redbeat_redis_url"].startswith("redis-sentinel://")
    redis_options = options["redbeat_redis_options"]
    assert redis_options["sentinels"] == [("a", 1), ("b", 2)]
    assert redis_options["service_name"] == "pool" and redis_options["db"] == 5
    assert redis_options["password"] == "pw"


def test_sentinel_client_is_managed_by_the_sentinels() -> None:
    client = redis_client.client(settings(SENTINELS, redis_sentinel_master="pool", redis_password="pw"))
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "pool"
    assert pool.connection_kwargs["password"] == "pw"


def test_password_setting_goes_into_every_broker_url_part() -> None:
    s = settings("sentinel://a:1;sentinel://b:2", redis_password="p@ss:word")
    assert broker.celery_options(s)["broker_url"] == "sentinel://:p%40ss%3Aword@a:1;sentinel://:p%40ss%3Aword@b:2"
    plain = settings("redis://u:inurl@h:1/0", redis_password="ignored")
    assert broker.celery_options(plain)["broker_url"] == "redis://u:inurl@h:1/0"
    assert redis_client.client(plain).connection_pool.connection_kwargs["password"] == "inurl"


def test_tls_options_for_rediss_and_for_sentinel_when_asked() -> None:
    s = settings("rediss://h:6380/0", redis_tls_ca_file="/ca.pem", redis_tls_cert_file="/c.pem",
                 redis_tls_key_file="/k.pem")
    assert broker.celery_options(s)["broker_use_ssl"] == {
        "ssl_cert_reqs": ssl.CERT_REQUIRED, "ssl_ca_certs": "/ca.pem", "ssl_certfile": "/c.pem",
        "ssl_keyfile": "/k.pem"}
    assert redis_client.client(s).connection_pool.connection_kwargs["ssl_ca_certs"] == "/ca.pem"
    assert "broker_use_ssl" not in broker.celery_options(settings(SENTINELS))
    tls_sentinel = settings(SENTINELS, redis_tls=True, redis_tls_ca_file="/ca.pem")
    options = broker.celery_options(tls_sentinel)
    assert options["broker_use_ssl"]["ssl_ca_certs"] == "/ca.pem"
    assert options["broker_transport_options"]["sentinel_kwargs"]["ssl"] is True
    assert broker.redbeat_options(tls_sentinel)["redbeat_redis_use_ssl"]["ssl_ca_certs"] == "/ca.pem"


@pytest.mark.parametrize("url, message", [
    ("", "empty"),
    ("http://h:1", "unsupported"),
    ("redis://a:1;redis://b:2", "only for sentinel"),
    ("sentinel://a:1;redis://b:2", "every part"),
    ("redis://h:1/x", "must be a number"),
])
def test_malformed_urls_are_refused_clearly(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        redis_client.parse(settings(url))


def test_sentinel_needs_a_master_name() -> None:
    with pytest.raises(ValueError, match="POOLBOY_REDIS_SENTINEL_MASTER"):
        redis_client.parse(settings(SENTINELS, redis_sentinel_master=""))


def test_settings_read_from_a_given_environment() -> None:
    s = Settings.from_env({"POOLBOY_REDIS_URL": SENTINELS, "POOLBOY_REDIS_SENTINEL_MASTER": "m",
                           "POOLBOY_REDIS_TLS": "true"})
    assert s.redis_url == SENTINELS and s.redis_sentinel_master == "m" and s.redis_tls is True
