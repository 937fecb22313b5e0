"""The one backoff policy (poolboy.utils.backoff): exponential bounds with full jitter, floors and a loop counter."""

from __future__ import annotations

from poolboy.utils.backoff import Backoff, full_jitter


def test_full_jitter_stays_within_the_exponential_bound_and_the_cap() -> None:
    for attempt in range(1, 30):
        bound = min(60.0, 0.5 * 2 ** (attempt - 1))
        samples = [full_jitter(attempt, base=0.5, cap=60.0) for _ in range(200)]
        assert all(0.0 <= s <= bound for s in samples), attempt
    assert max(full_jitter(30, base=0.5, cap=60.0) for _ in range(200)) > 30.0, "jitter spreads over the whole range"


def test_floor_and_first_attempt() -> None:
    assert all(0.1 <= full_jitter(1, base=1.0, cap=300.0, floor=0.1) <= 1.0 for _ in range(100))
    assert all(full_jitter(0, base=1.0, cap=5.0) <= 1.0 for _ in range(100)), "attempt 0 counts as the first"


def test_loop_backoff_grows_until_reset() -> None:
    loop = Backoff(base=0.1, cap=5.0)
    delays = [loop.next_delay() for _ in range(12)]
    assert loop.failures == 12
    assert all(0.0 <= d <= 5.0 for d in delays)
    loop.reset()
    assert loop.failures == 0 and loop.next_delay() <= 0.2


def test_an_api_fault_retries_within_its_own_cap_but_honours_retry_after() -> None:
    from workqueue import ratelimit as key_backoff

    for failures in range(1, 30):
        assert key_backoff.FLOOR <= key_backoff.delay(failures, None, cap=10.0, retry_after_cap=300.0) <= 10.0
    assert key_backoff.delay(1, 60.0, cap=10.0, retry_after_cap=300.0) == 60.0
    assert key_backoff.delay(1, 900.0, cap=10.0, retry_after_cap=300.0) == 300.0
    assert key_backoff.delay(1, 900.0, cap=10.0) == 10.0  # without a separate cap, Retry-After is capped alike


def test_a_keys_backoff_is_capped_jittered_and_honours_retry_after() -> None:
    from workqueue import ratelimit

    assert all(ratelimit.FLOOR <= ratelimit.delay(n, cap=300) <= 300 for n in range(1, 40))
    assert all(ratelimit.delay(1) <= 1.0 for _ in range(50))
    assert ratelimit.delay(1, retry_after=7) >= 7
    assert ratelimit.delay(1, retry_after=10_000, cap=300) == 300
