"""The benchmark's figures are drawn from the JSON claims.py writes, whichever workloads a file holds."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import plots


def _burst(samples: list[float], workers: int = 2, latency: float = 0.0) -> dict:
    return {"workers": workers, "api_latency_ms": latency, "throughput_per_s": 100.0 * workers,
            "create_to_bound": {"p99": samples[-1]}, "create_to_bound_samples": samples}


def _scale(claims: int, cpu: float) -> dict:
    return {"claims": claims,
            "burst": {"cpu_ms_per_claim": {"with_replenishment": {"operator": cpu}},
                      "api_requests_by_verb_resource": {"with_replenishment": {"total": 12.0}}},
            "rest": {"requests_per_s_per_10k_objects": 0.01,
                     "memory": {"operator_incl_redis_mib_per_1k_objects": 20.0}}}


def test_each_figure_the_files_hold_is_drawn(tmp_path: Path) -> None:
    both = {"systems": {
        "project": {"W1": {"runs": [_burst([0.1, 0.2, 0.4])]},
                    "W6": {"1": {"runs": [_burst([1.0], 1, 10.0)]}, "8": {"runs": [_burst([0.5], 8, 10.0)]}},
                    "SCALE": {"runs": [_scale(1500, 20.0), {"error": "x"}]}},
        "upstream": {"W1": {"runs": [_burst([1.0, 2.0])]}, "W6": {"1": {"runs": [_burst([3.0], 1, 10.0)]}}},
    }}
    one = {"args": {"system": "project"}, "workloads": {"SCALE": {"runs": [_scale(10000, 21.0)]}}}
    files = []
    for index, document in enumerate((both, one)):
        files.append(tmp_path / f"{index}.json")
        files[-1].write_text(json.dumps(document))
    written = plots.draw(files, tmp_path / "out")
    assert sorted(path.name for path in written) == ["create-to-bound.png", "replicas.png", "scale.png"]
    assert all(path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for path in written)
    assert [point["claims"] for point in plots.scale_points([plots.load(f) for f in files])["project"]] == [1500, 10000]


def test_a_file_without_those_workloads_draws_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mem.json"
    path.write_text(json.dumps({"workloads": {"MEM": {"idle_at_start": {}}}}))
    assert plots.draw([path], tmp_path / "out") == []
