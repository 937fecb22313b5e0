"""The private names of Celery and kombu the project uses (:mod:`workers.compat`) are where they were when it was
written: on another version of either library this fails loudly, naming what to re-check, instead of a publish or a
reconnection breaking in production."""

from __future__ import annotations

import inspect

import celery
import flower
import flower.events
import flower.inspector
import kombu
from celery.beat import Service
from celery.events.receiver import EventReceiver
from celery.worker.consumer import Consumer
from kombu.transport import redis as kombu_redis

from workers import compat


def test_the_installed_celery_and_kombu_are_the_versions_compat_was_checked_against() -> None:
    installed = {"celery": celery.__version__, "kombu": kombu.__version__, "flower": flower.__version__}
    assert installed == compat.CHECKED, (
        f"Celery/kombu {installed} differ from {compat.CHECKED}: re-check every private name in workers/compat.py "
        "(its docstring lists them), then update CHECKED")


def test_every_private_name_compat_relies_on_is_there_with_the_arguments_it_passes() -> None:
    channel = kombu_redis.Channel
    expected = {
        (channel, "_get_pool"): ["self", "asynchronous"],
        (channel, "_connparams"): ["self", "asynchronous"],
        (channel, "_create_client"): ["self", "asynchronous"],
        (channel, "_inplace_augment_message"): ["self", "message", "exchange", "routing_key"],
        (channel, "_q_for_pri"): ["self", "queue", "pri"],
        (Consumer, "_flush_events"): ["self"],
        (EventReceiver, "capture"): ["self", "limit", "timeout", "wakeup"],
        (kombu_redis.QoS, "append"): ["self", "message", "delivery_tag"],
        (kombu_redis.QoS, "ack"): ["self", "delivery_tag"],
        (flower.inspector.Inspector, "_inspect"): ["self", "method", "workername"],
    }
    for (owner, name), parameters in expected.items():
        found = getattr(owner, name, None)
        assert callable(found), f"{owner.__qualname__}.{name} is gone"
        assert list(inspect.signature(found).parameters) == parameters, f"{owner.__qualname__}.{name} changed"
    assert "_last_tick" in inspect.getsource(Service), "celery beat's Service no longer stamps _last_tick"
    assert flower.events.EventReceiver is EventReceiver or flower.events.EventReceiver.__module__ == compat.__name__, (
        "Flower no longer builds its event receiver from flower.events.EventReceiver")
