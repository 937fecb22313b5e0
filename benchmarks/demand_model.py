"""The demand benchmark's day, replayed against a model of the pool instead of the stack: seconds, not minutes.

``demand.py`` replays a compressed day through the real stack, one 150 s day per sizing. This script replays the
same seeded arrivals (:func:`benchmarks.demand.arrivals`) against a model of the pool: handles ready ``--ready``
seconds after their creation; a claim takes the unbound handle that is ready first (a warm hit when it is ready
within ``--warm-seconds``), or finds none and gets a handle made for it (``--ready`` seconds, a miss); the pool
re-checks on every claim and every ``--recheck`` seconds, creating handles up to its target and deleting surplus
unready handles first, newest first. The autoscaled target comes from the pool's own model
(:func:`poolboy.domain.autoscaling.decide` and the rate rule of ``poolboy/reconcilers/pool_autoscaling.py``: the
higher of the rates over the window and over its last sixth, binds plus misses).

On the default day it reproduces the stack's static figures exactly (round 6: warm-hit 0.70, 0.85, 0.94 and 1.0 for
4, 8, 10 and 12 handles), so it is a quick way to compare settings before spending stack runs on them. Its autoscaled
rows are not the stack's (round 6, seed 20: the stack 1.0 warm at 1 257 idle handle-seconds, the model 0.76 at
1 112): it leaves out the operator's own delays (the watch, the queue, the pool's status) and uses a fixed time to
ready where the pool measures one, so read them as relative, one setting against another.

With ``--period`` it also replays ``--learn-days`` days before the measured one for a pool that learns the day
(``spec.autoscaling.period``, :mod:`poolboy.domain.demand_profile`); with ``--oracle``, a pool that knows the day's
true rate and sizes for the claims expected over the next time to ready — the bound on what any autoscaling can
reach on that day. Each autoscaled row is checked against issue 20's target: a warm-hit ratio at least that of the
smallest static size reaching 95 %, with at most 0.6× its idle handle-seconds.

    .venv/bin/python benchmarks/demand_model.py --seeds 20,21,22 --window 30 --scale-down-delay 15
    .venv/bin/python benchmarks/demand_model.py --day workday --seconds 300 --scale 3 --seeds 20,21,22 \
        --static $(seq -s, 1 40) --max-available 40 --window 20 --scale-down-delay 2 --period --oracle
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.demand import DAYS, Day, arrivals, days_of_arrivals, rate_at
from poolboy.domain import autoscaling, demand_profile

STEP_S = 0.25
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Pool:
    """Unbound handles (each its ready time), the claims' waits, and the unbound count sampled every second."""

    handles: list[float]
    demand: list[float] = field(default_factory=list)  # binds and misses, their times
    waits: list[float] = field(default_factory=list)
    unbound: list[int] = field(default_factory=list)
    profile: demand_profile.Profile | None = None  # with a period: what the pool has learned by its last run
    counted: int = 0  # the demand the profile had counted by then

    def claim(self, at: float, ready_s: float) -> None:
        self.demand.append(at)
        if self.handles:
            self.handles.sort()
            self.waits.append(max(0.0, self.handles.pop(0) - at))
        else:
            self.waits.append(ready_s)

    def resize(self, target: int, now: float, ready_s: float) -> None:
        while len(self.handles) < target:
            self.handles.append(now + ready_s)
        if len(self.handles) > target:
            self.handles.sort(key=lambda ready_at: (ready_at <= now, -ready_at))  # unready first, newest first
            del self.handles[:len(self.handles) - target]

    def rate(self, now: float, span: float) -> float:
        """Claims per second over the last ``span`` seconds (the pool's age, if younger)."""
        return sum(1 for at in self.demand if now - span < at <= now) / min(span, max(now, 5.0))


Target = Callable[[Pool, float, dict], int]


def autoscaled(policy: autoscaling.Policy, ready_s: float) -> Target:
    """The target rule of an autoscaled pool: the model's decision on the higher of the two rates and, with a
    period, of the learned profile's forecast (every claim counted as demand when the pool next runs)."""
    window = policy.window.total_seconds()
    short = autoscaling.short_window(policy).total_seconds()
    horizon = timedelta(seconds=ready_s)

    def expected(pool: Pool, moment: datetime) -> float:
        if policy.period is None:
            return 0.0
        profile = pool.profile or demand_profile.load(None, policy.period, moment)
        closing = demand_profile.boundaries(profile, moment)
        pool.profile = demand_profile.advance(profile, moment, len(pool.demand) - pool.counted, [0] * len(closing))
        pool.counted = len(pool.demand)
        return demand_profile.forecast(pool.profile, moment, horizon)

    def target(pool: Pool, now: float, previous: dict) -> int:
        moment = EPOCH + timedelta(seconds=now)
        rate = max(pool.rate(now, window), pool.rate(now, short), expected(pool, moment))
        decision = autoscaling.decide(rate, ready_s, policy, previous, moment)
        previous.clear()
        previous.update({"target": decision.target, "lowerSince": decision.lower_since})
        return decision.target

    return target


def replay(trace: list[float], seconds: float, target: Callable[[Pool, float, dict], int], start: int,
           ready_s: float, recheck_s: float) -> Pool:
    pool = Pool(handles=[-ready_s] * start)  # the day starts warm
    previous: dict = {}
    pending = iter(trace)
    arrival = next(pending, None)
    last_check, now = -recheck_s, 0.0
    while now < seconds:
        woken = False
        while arrival is not None and arrival < now + STEP_S:
            pool.claim(arrival, ready_s)
            arrival, woken = next(pending, None), True
        if woken or now - last_check >= recheck_s:
            pool.resize(target(pool, now, previous), now, ready_s)
            last_check = now
        if int(now) != int(now + STEP_S):
            pool.unbound.append(len(pool.handles))
        now += STEP_S
    return pool


def oracle(policy: autoscaling.Policy, ready_s: float, day: Day, seconds: float, scale: float) -> Target:
    """A pool that knows the day's true arrival rate and sizes for the claims expected over the next time to ready:
    what no measurement or forecast can beat, the bound on what autoscaling can reach on a day."""

    def target(pool: Pool, now: float, previous: dict) -> int:
        steps = 20
        mean = sum(rate_at(((now + ready_s * (k + 0.5) / steps) % seconds) / seconds, day) * scale
                   for k in range(steps)) * ready_s / steps
        decision = autoscaling.decide(mean / ready_s, ready_s, policy, previous, EPOCH + timedelta(seconds=now))
        previous.clear()
        previous.update({"target": decision.target, "lowerSince": decision.lower_since})
        return decision.target

    return target


def figures(name: str, pool: Pool, warm_s: float, since: float = 0.0) -> dict:
    """The figures of the day measured: claims that arrived from ``since`` on, samples from ``since`` on."""
    waits = [wait for at, wait in zip(pool.demand, pool.waits, strict=True) if at >= since]
    warm = sum(1 for wait in waits if wait <= warm_s)
    return {"sizing": name, "claims": len(waits), "warm_hit_ratio": round(warm / max(1, len(waits)), 3),
            "idle_handle_seconds": sum(pool.unbound[int(since):])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--day", choices=sorted(DAYS), default="compact", help="the day's shape")
    parser.add_argument("--seeds", default="20", help="comma-separated seeds of the measured day (20 is demand.py's)")
    parser.add_argument("--static", default="4,6,8,10,11,12,14", help="static sizes to replay")
    parser.add_argument("--ready", type=float, default=9.0, help="seconds from a handle's creation to ready")
    parser.add_argument("--recheck", type=float, default=3.0, help="the pool's re-check interval, seconds")
    parser.add_argument("--warm-seconds", type=float, default=2.0)
    parser.add_argument("--min-available", type=int, default=1)
    parser.add_argument("--max-available", type=int, default=12)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--scale-down-delay", type=float, default=15.0)
    parser.add_argument("--warm-hit-ratio", type=float, default=autoscaling.DEFAULT_WARM_HIT_RATIO)
    parser.add_argument("--period", action="store_true", help="also autoscaling that learns the day")
    parser.add_argument("--learn-days", type=int, default=3, help="with --period: days before the measured one")
    parser.add_argument("--oracle", action="store_true", help="also a pool that knows the day's true rate")
    args = parser.parse_args()
    policy = autoscaling.Policy(args.min_available, args.max_available, timedelta(seconds=args.window),
                                timedelta(seconds=args.scale_down_delay), args.warm_hit_ratio)
    day = DAYS[args.day]
    report: list[dict[str, Any]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        trace = arrivals(args.seconds, args.scale, seed, day)
        rows = [figures(f"static {size}", replay(trace, args.seconds, lambda *_, n=size: n, size, args.ready,
                                                 args.recheck), args.warm_seconds)
                for size in (int(s) for s in args.static.split(","))]
        statics = len(rows)
        rows.append(figures("autoscaling", replay(trace, args.seconds, autoscaled(policy, args.ready),
                                                  args.min_available, args.ready, args.recheck), args.warm_seconds))
        if args.period:
            learning = replace(policy, period=timedelta(seconds=args.seconds))
            days = days_of_arrivals(args.seconds, args.scale, seed, day, args.learn_days + 1)
            since = args.learn_days * args.seconds
            rows.append(figures("autoscaling, period", replay(days, since + args.seconds, autoscaled(
                learning, args.ready), args.min_available, args.ready, args.recheck), args.warm_seconds, since))
        if args.oracle:
            rows.append(figures("oracle", replay(trace, args.seconds, oracle(
                policy, args.ready, day, args.seconds, args.scale), args.min_available, args.ready, args.recheck),
                                args.warm_seconds))
        smallest = next((row for row in rows[:statics] if row["warm_hit_ratio"] >= 0.95), None)
        for row in rows[statics:]:
            if smallest is not None:
                row["idle_vs_smallest_static_at_95"] = round(
                    row["idle_handle_seconds"] / max(1, smallest["idle_handle_seconds"]), 2)
                row["meets_target"] = row["warm_hit_ratio"] >= smallest["warm_hit_ratio"] \
                    and row["idle_vs_smallest_static_at_95"] <= 0.6
        report.append({"seed": seed, "claims": len(trace), "rows": rows})
        print(f"seed {seed}: {len(trace)} claims; smallest static at 95 %: "
              f"{smallest['sizing'] if smallest else 'none'}", file=sys.stderr)
        for row in rows:
            print(f"  {row['sizing']:<20} warm {row['warm_hit_ratio']:<6} idle handle-s {row['idle_handle_seconds']}"
                  + (f" ({row['idle_vs_smallest_static_at_95']}x)" if "idle_vs_smallest_static_at_95" in row else "")
                  + (" meets the target" if row.get("meets_target") else ""), file=sys.stderr)
    met = {name: sum(1 for seed in report for row in seed["rows"] if row["sizing"] == name and row.get("meets_target"))
           for name in dict.fromkeys(row["sizing"] for seed in report for row in seed["rows"][statics:])}
    print("seeds meeting the target: " + ", ".join(f"{name} {count}/{len(report)}" for name, count in met.items()),
          file=sys.stderr)
    json.dump({"args": vars(args), "seeds": report, "met": met}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
