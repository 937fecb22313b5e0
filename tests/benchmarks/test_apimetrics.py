"""Reading kube-apiserver's /metrics: requests by verb and resource, mean latencies, etcd requests, as deltas."""

from __future__ import annotations

from benchmarks import apimetrics

GET_CONFIGMAPS = 'component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="GET"'
PATCH_STATUS = 'component="apiserver",group="x.io",resource="claims",subresource="status",verb="PATCH"'
BEFORE = f"""\
# TYPE apiserver_request_total counter
apiserver_request_total{{code="200",{GET_CONFIGMAPS}}} 10
apiserver_request_total{{code="404",{GET_CONFIGMAPS}}} 2
apiserver_request_total{{code="200",{PATCH_STATUS}}} 4
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{{{GET_CONFIGMAPS},le="+Inf"}} 12
apiserver_request_duration_seconds_sum{{{GET_CONFIGMAPS}}} 0.12
apiserver_request_duration_seconds_count{{{GET_CONFIGMAPS}}} 12
# TYPE etcd_request_duration_seconds histogram
etcd_request_duration_seconds_sum{{operation="get",type="/registry/configmaps"}} 0.5
etcd_request_duration_seconds_count{{operation="get",type="/registry/configmaps"}} 5
"""


def test_a_delta_is_what_was_served_between_two_snapshots_per_claim() -> None:
    after = (BEFORE.replace("} 10\n", "} 30\n").replace("} 12\n", "} 32\n").replace("} 0.12\n", "} 0.52\n")
             .replace("} 0.5\n", "} 1.5\n").replace("} 5\n", "} 15\n"))
    served = apimetrics.delta(apimetrics.parse(BEFORE), apimetrics.parse(after), n=10)
    # 20 more GETs of configmaps (whatever their code), no more PATCHes of claims' status
    assert served["requests_per_claim"] == {"total": 2.0, "GET configmaps": 2.0}
    assert served["latency_by_verb"] == {"GET": {"count": 20, "mean_ms": 20.0}}
    assert served["etcd_by_operation_type"] == {"get /registry/configmaps": {"count": 10, "mean_ms": 100.0}}
    assert served["etcd_requests_per_claim"] == 1.0


def test_a_subresource_is_named_with_its_resource() -> None:
    snapshot = apimetrics.parse(BEFORE)
    assert snapshot.requests[("PATCH", "claims/status")] == 4
    assert snapshot.requests[("GET", "configmaps")] == 12
