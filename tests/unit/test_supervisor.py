"""``poolboy dev``'s supervisor (stack.supervisor) on stand-in components and a hand-driven clock: pure logic."""

from __future__ import annotations

from stack.supervisor import Supervised, Supervisor, last_line


class Component:
    def __init__(self, name: str) -> None:
        self.name, self.up, self.starts = name, True, 0

    def supervised(self) -> Supervised:
        return Supervised(self.name, lambda: self.up, lambda: "status 0, last log line: boom", self.start)

    def start(self) -> None:
        self.starts += 1
        self.up = True


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def supervise(*components: Component) -> tuple[Supervisor, Clock, list[str]]:
    clock, said = Clock(), []
    return Supervisor([c.supervised() for c in components], clock=clock, say=said.append, stable=60), clock, said


def test_a_dead_component_is_announced_once_and_restarted_after_a_second() -> None:
    worker, beat = Component("worker-0"), Component("beat")
    supervisor, clock, said = supervise(worker, beat)
    supervisor.check()
    assert said == [] and worker.starts == 0
    worker.up = False
    supervisor.check()
    clock.now = 0.5
    supervisor.check()
    assert said == ["worker-0 exited (status 0, last log line: boom); restarting it in 1s"]
    assert worker.starts == 0
    clock.now = 1.0
    supervisor.check()
    assert worker.starts == 1 and worker.up and beat.starts == 0


def test_the_delay_doubles_up_to_thirty_seconds_and_resets_once_stable() -> None:
    worker = Component("worker-0")
    supervisor, clock, said = supervise(worker)
    delays = []
    for _ in range(7):
        worker.up = False
        supervisor.check()
        delays.append(int(said[-1].split("restarting it in ")[1].split("s")[0]))
        clock.now += delays[-1]
        supervisor.check()
        assert worker.up
    assert delays == [1, 2, 4, 8, 16, 30, 30]
    assert said[-1].endswith("(restart 7)")
    clock.now += 60  # stayed up a minute
    supervisor.check()
    worker.up = False
    supervisor.check()
    assert said[-1].endswith("restarting it in 1s")


def test_last_line_is_the_last_words_of_a_log() -> None:
    assert last_line("a\nCRITICAL Unrecoverable error\n\n") == "CRITICAL Unrecoverable error"
    assert last_line("") == "no output"
