"""The HPA algorithm in virtual time: hand-computed cases, cases in the shape of Kubernetes'
replica-calculator table (our own numbers), stabilization windows, rate policies and bounds."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest

from gitfleet.autoscale.hpa import (
    AutoscaleHistory,
    Behavior,
    Decision,
    MetricTarget,
    PodSample,
    decide,
)
from gitfleet.errors import InputError

NOW = 10_000.0
CPU50 = MetricTarget(resource="cpu", type="Utilization", value=Fraction(50))
# behaviour that neither stabilizes nor limits the rate: shows the raw proposal
FREE = Behavior.from_spec({
    "scaleUp": {"stabilizationWindowSeconds": 0,
                "policies": [{"type": "Percent", "value": 1000, "periodSeconds": 1}]},
    "scaleDown": {"stabilizationWindowSeconds": 0,
                  "policies": [{"type": "Percent", "value": 100, "periodSeconds": 1}]}})


def m(text: str) -> Fraction:
    """`250m` → cores; `64Mi` → bytes."""
    from gitfleet.quantity import parse_quantity
    return parse_quantity(text)


def pod(name: str, *, cpu: str | None = None, memory: str | None = None,
        request_cpu: str | None = "1", request_memory: str | None = "256Mi",
        cluster: str = "child-1", ready: bool = True, phase: str = "Running",
        started: float | None = NOW - 3600, ready_changed: float | None = NOW - 3500,
        metric_time: float | None = None, deleting: bool = False,
        no_usage: bool = False) -> PodSample:
    usage: dict[str, Fraction] | None = {}
    assert usage is not None
    if cpu is not None:
        usage["cpu"] = m(cpu)
    if memory is not None:
        usage["memory"] = m(memory)
    requests = {}
    if request_cpu is not None:
        requests["cpu"] = m(request_cpu)
    if request_memory is not None:
        requests["memory"] = m(request_memory)
    return PodSample(cluster=cluster, name=name, ready=ready, phase=phase, started=started,
                     ready_changed=ready_changed, usage=None if no_usage else usage,
                     requests=requests, deleting=deleting, metric_time=metric_time)


def run(pods: Sequence[PodSample], *, current: int, metrics: Sequence[MetricTarget] = (CPU50,),
        min_replicas: int = 1, max_replicas: int = 100, behavior: Behavior = FREE,
        history: AutoscaleHistory | None = None, now: float = NOW, **kw: Any) -> Decision:
    return decide(now=now, current=current, pods=pods, metrics=metrics,
                  min_replicas=min_replicas, max_replicas=max_replicas, behavior=behavior,
                  history=history or AutoscaleHistory(), **kw)


# --- the ratio, by hand ------------------------------------------------------------------------

def test_scale_up_is_ceil_of_ratio_times_ready_pods() -> None:
    # 900m + 1000m + 1100m over 3 x 1 core = 100 %; target 50 % -> ratio 2 -> 6
    d = run([pod("a", cpu="900m"), pod("b", cpu="1"), pod("c", cpu="1100m")], current=3)
    assert (d.desired, d.metrics[0].value, d.metrics[0].proposed) == (6, 100, 6)
    assert d.reason == "cpu resource utilization (percentage of request) above target"
    assert d.condition("ScalingActive").reason == "ValidMetricFound"  # type: ignore[union-attr]
    assert d.condition("AbleToScale").reason == "SucceededRescale"  # type: ignore[union-attr]


def test_pods_in_several_clusters_count_together() -> None:
    pods = [pod("web-1", cpu="800m", cluster="child-1"), pod("web-1", cpu="800m",
                                                               cluster="child-2")]
    # same pod name in two clusters: two pods, 80 % against 50 % -> ceil(1.6 x 2) = 4
    assert run(pods, current=2).desired == 4


def test_scale_down_rounds_up() -> None:
    # 100+300+500+250+250 = 1400m of 5 cores = 28 %; 28/50 x 5 = 2.8 -> 3
    d = run([pod(n, cpu=c) for n, c in
             zip("abcde", ("100m", "300m", "500m", "250m", "250m"), strict=True)], current=5)
    assert d.desired == 3
    assert d.reason == "All metrics below target"


@pytest.mark.parametrize(("usage", "expected"), [
    ("540m", 4),   # 54 % / 50 % = 1.08: within tolerance
    ("550m", 4),   # exactly 1.1: within tolerance (exact arithmetic, not floats)
    ("560m", 5),   # 1.12: ceil(1.12 x 4) = 5
    ("450m", 4),   # 0.9: within
    ("440m", 4),   # 0.88 x 4 = 3.52 -> 4: outside tolerance, yet rounds back to 4
    ("370m", 3),   # 0.74 x 4 = 2.96 -> 3
])
def test_tolerance(usage: str, expected: int) -> None:
    assert run([pod(n, cpu=usage) for n in "abcd"], current=4).desired == expected


def test_custom_tolerance() -> None:
    pods = [pod(n, cpu="600m") for n in "abcd"]  # 1.2
    assert run(pods, current=4).desired == 5
    assert run(pods, current=4, tolerance=0.25).desired == 4


def test_utilization_truncates_to_whole_percent() -> None:
    # 1001m of 3 cores = 33.36 % -> 33 %; target 30 -> 1.1 -> within tolerance
    d = run([pod("a", cpu="1001m"), pod("b", cpu="0"), pod("c", cpu="0")], current=3,
            metrics=[MetricTarget(resource="cpu", type="Utilization", value=Fraction(30))])
    assert (d.metrics[0].value, d.desired) == (33, 3)


def test_average_value_memory() -> None:
    target = MetricTarget(resource="memory", type="AverageValue", value=m("125Mi"))
    pods = [pod(n, memory=q, request_memory=None)
            for n, q in zip("abcd", ("100Mi", "200Mi", "300Mi", "400Mi"), strict=True)]
    d = run(pods, current=4, metrics=[target])
    assert d.metrics[0].value == m("250Mi")
    assert d.desired == 8  # average 250Mi is twice the target


def test_average_value_cpu_scale_down() -> None:
    target = MetricTarget(resource="cpu", type="AverageValue", value=m("500m"))
    d = run([pod(n, cpu="200m") for n in "abcdef"], current=6, metrics=[target])
    assert d.desired == 3  # 0.4 x 6 = 2.4 -> 3


# --- missing metrics and unready pods (Kubernetes' rules) ---------------------------------------

def test_missing_metrics_count_as_full_request_on_scale_down() -> None:
    # ready: 3 x 100m = 10 %; the missing pod counts as 100 %: 1300m / 4 cores = 32 % ->
    # 0.64 x 4 = 2.56 -> 3
    pods = [pod("a", cpu="100m"), pod("b", cpu="100m"), pod("c", cpu="100m"),
            pod("d", no_usage=True)]
    assert run(pods, current=4).desired == 3


def test_missing_metrics_count_as_target_when_target_is_above_100_percent() -> None:
    target = MetricTarget(resource="cpu", type="Utilization", value=Fraction(200))
    # ready 2 x 500m = 50 % (0.25); missing counts 200 %: 3000m / 3 cores = 100 % -> 0.5 x 3
    pods = [pod("a", cpu="500m"), pod("b", cpu="500m"), pod("c", no_usage=True)]
    assert run(pods, current=3, metrics=[target]).desired == 2


def test_missing_metrics_count_as_zero_on_scale_up() -> None:
    # ready 3 x 900m = 90 % (1.8); missing counts 0: 2700m / 4 = 67 % -> 1.34 x 4 = 5.36 -> 6
    pods = [pod(n, cpu="900m") for n in "abc"] + [pod("d", no_usage=True)]
    assert run(pods, current=4).desired == 6


def test_missing_metrics_that_flip_the_direction_keep_the_size() -> None:
    # ready 400m = 40 % (scale down); missing counted full: 1400m / 2 = 70 % -> up: keep
    pods = [pod("a", cpu="400m"), pod("b", no_usage=True)]
    assert run(pods, current=2).desired == 2


def test_missing_metrics_that_land_within_tolerance_keep_the_size() -> None:
    # ready 2 x 800m (1.6); missing counted 0: 1600m / 3 = 53 % -> 1.06
    pods = [pod("a", cpu="800m"), pod("b", cpu="800m"), pod("c", no_usage=True)]
    assert run(pods, current=3).desired == 3


def test_unready_pods_count_as_zero_on_scale_up() -> None:
    # ready 2 x 1 core = 100 % (2.0); pending pod counted 0: 2000m / 3 = 66 % -> 1.32 x 3 = 4
    pods = [pod("a", cpu="1"), pod("b", cpu="1"), pod("c", phase="Pending", no_usage=True)]
    assert run(pods, current=3).desired == 4


def test_unready_pods_are_left_out_on_scale_down() -> None:
    # ready 2 x 100m = 10 % -> 0.2 x 2 = 0.4 -> 1; the pending pod does not hold it up
    pods = [pod("a", cpu="100m"), pod("b", cpu="100m"), pod("c", phase="Pending",
                                                              no_usage=True)]
    assert run(pods, current=3).desired == 1


def test_failed_and_deleting_pods_are_ignored() -> None:
    pods = [pod("a", cpu="1"), pod("b", cpu="1"), pod("c", cpu="0", phase="Failed"),
            pod("d", cpu="0", deleting=True)]
    assert run(pods, current=4).desired == 4  # 100 % over the 2 that count: ceil(2 x 2) = 4


def test_cpu_of_a_pod_still_warming_up_is_not_trusted() -> None:
    # all three pods at 100 % of a core; 2.0 x 3 = 6 if all count
    busy = [pod("a", cpu="1"), pod("b", cpu="1")]
    # started 60 s ago, Ready 20 s ago: its sample covers less than a full window since Ready,
    # so it is unready: counted as 0 on the way up -> 2000m / 3 = 66 % -> ceil(1.32 x 3) = 4
    warming = pod("c", cpu="1", started=NOW - 60, ready_changed=NOW - 20)
    assert run([*busy, warming], current=3).desired == 4
    # a full window since Ready: its sample counts
    settled = pod("c", cpu="1", started=NOW - 60, ready_changed=NOW - 40)
    assert run([*busy, settled], current=3).desired == 6
    # sampled before the window was full, even if evaluated later
    stale = pod("c", cpu="1", started=NOW - 60, ready_changed=NOW - 40, metric_time=NOW - 20)
    assert run([*busy, stale], current=3).desired == 4
    # memory has no warm-up rule: an unready pod's memory counts
    mem = MetricTarget(resource="memory", type="AverageValue", value=m("100Mi"))
    unready = pod("c", memory="0", ready=False, started=NOW - 60, ready_changed=NOW - 20)
    d = run([pod("a", memory="300Mi"), pod("b", memory="300Mi"), unready], current=3,
            metrics=[mem])
    assert d.desired == 6  # average 200Mi over 3 pods


def test_cpu_of_a_pod_never_ready_after_start_is_not_trusted() -> None:
    busy = [pod("a", cpu="1"), pod("b", cpu="1")]
    # long started, not Ready, and its Ready condition last changed within the readiness
    # delay of its start: it never became Ready, so its sample is not trusted
    never = pod("c", cpu="1", ready=False, started=NOW - 3600, ready_changed=NOW - 3590)
    assert run([*busy, never], current=3).desired == 4
    # one that was Ready and later failed its probe still reports real usage
    dropped = pod("c", cpu="1", ready=False, started=NOW - 3600, ready_changed=NOW - 100)
    d = run([*busy, dropped], current=3)
    assert (d.desired, d.metrics[0].value) == (6, 100)


def test_a_pod_without_a_ready_condition_is_unready_for_cpu() -> None:
    fresh = pod("c", cpu="0", ready=False, ready_changed=None)
    pods = [pod("a", cpu="100m"), pod("b", cpu="100m"), fresh]
    assert run(pods, current=3).desired == 1  # left out on a scale-down


# --- cases in the shape of Kubernetes' replica-calculator table (our own figures) -------------

@pytest.mark.parametrize(("case", "current", "usages", "target", "expected"), [
    ("up", 3, ["250m", "450m", "650m"], 30, 5),           # 45 % / 30 % = 1.5 x 3 = 4.5
    ("up, one unready", 3, ["900m", "900m", None], 30, 6),  # 90 %, then 60 %: 2 x 3
    ("up, unready holds", 3, ["600m", "400m", None], 30, 3),  # 50 %, then 33 %: 1.1
    ("down", 5, ["100m", "200m", "100m", "200m", "150m"], 50, 2),  # 15 %: 0.3 x 5 = 1.5
    ("down, one missing", 4, ["50m", "50m", "50m", "missing"], 50, 3),
    ("within tolerance", 3, ["1050m", "1000m", "950m"], 100, 3),
    ("up, all ready, uneven", 4, ["2", "0", "0", "0"], 20, 10),  # 50 % / 20 = 2.5 x 4
])
def test_table(case: str, current: int, usages: list[str | None], target: int,
               expected: int) -> None:
    pods = []
    for i, u in enumerate(usages):
        if u is None:
            pods.append(pod(f"p{i}", phase="Pending", no_usage=True))
        elif u == "missing":
            pods.append(pod(f"p{i}", no_usage=True))
        else:
            pods.append(pod(f"p{i}", cpu=u))
    metric = MetricTarget(resource="cpu", type="Utilization", value=Fraction(target))
    assert run(pods, current=current, metrics=[metric]).desired == expected, case


# --- failures and several metrics -----------------------------------------------------------

def test_missing_request_is_an_error_and_keeps_the_size() -> None:
    d = run([pod("a", cpu="1", request_cpu=None), pod("b", cpu="1")], current=2)
    assert d.desired == 2 and not d.changed
    cond = d.condition("ScalingActive")
    assert cond is not None and cond.status == "False"
    assert cond.reason == "FailedGetResourceMetric"
    assert "missing request for cpu in pod child-1/a" in cond.message
    assert d.metrics[0].proposed is None and "missing request" in d.metrics[0].error


def test_no_metrics_at_all_is_an_error() -> None:
    d = run([pod("a", no_usage=True)], current=1)
    assert d.desired == 1
    assert "did not receive cpu metrics" in d.metrics[0].error
    assert run([], current=1).metrics[0].error


def test_the_largest_proposal_wins() -> None:
    mem = MetricTarget(resource="memory", type="Utilization", value=Fraction(50))
    pods = [pod(n, cpu="1", memory="192Mi") for n in "ab"]  # cpu 2.0 -> 4; memory 1.5 -> 3
    d = run(pods, current=2, metrics=[mem, CPU50])
    assert [s.proposed for s in d.metrics] == [3, 4]
    assert d.desired == 4 and d.reason.startswith("cpu resource utilization")
    assert d.metrics[1].describe() == "cpu 100%/50%"


def test_a_failed_metric_blocks_a_scale_down_but_not_a_scale_up() -> None:
    mem = MetricTarget(resource="memory", type="Utilization", value=Fraction(50))
    up = [pod(n, cpu="1", request_memory=None, memory="1Mi") for n in "ab"]
    d = run(up, current=2, metrics=[CPU50, mem])
    assert d.desired == 4
    assert d.condition("ScalingActive").status == "True"  # type: ignore[union-attr]
    down = [pod(n, cpu="100m", request_memory=None, memory="1Mi") for n in "ab"]
    d = run(down, current=2, metrics=[CPU50, mem])
    assert d.desired == 2
    assert d.condition("ScalingActive").status == "False"  # type: ignore[union-attr]


# --- bounds ------------------------------------------------------------------------------------

def test_max_replicas_clamps() -> None:
    d = run([pod(n, cpu="1") for n in "abc"], current=3, max_replicas=5)
    assert d.desired == 5
    limited = d.condition("ScalingLimited")
    assert limited is not None and (limited.status, limited.reason) == ("True", "TooManyReplicas")


def test_min_replicas_clamps() -> None:
    d = run([pod(n, cpu="10m") for n in "abcd"], current=4, min_replicas=2)
    assert d.desired == 2
    assert d.condition("ScalingLimited").reason == "TooFewReplicas"  # type: ignore[union-attr]


def test_outside_the_bounds_goes_straight_to_them() -> None:
    pods = [pod(n, cpu="500m") for n in "abcdefgh"]
    assert run(pods, current=8, max_replicas=6).desired == 6
    d = run(pods[:1], current=1, min_replicas=3)
    assert d.desired == 3 and d.reason == "Current number of replicas below Spec.MinReplicas"


def test_zero_replicas_disables_scaling() -> None:
    d = run([], current=0)
    assert d.desired == 0
    cond = d.condition("ScalingActive")
    assert cond is not None and (cond.status, cond.reason) == ("False", "ScalingDisabled")


def test_bad_bounds_are_input_errors() -> None:
    with pytest.raises(InputError, match="minReplicas <= maxReplicas"):
        run([pod("a", cpu="1")], current=1, min_replicas=5, max_replicas=2)


# --- stabilization windows ---------------------------------------------------------------------

def steps(behavior: Behavior, plan: Sequence[tuple[float, int, str]],
          **kw: Any) -> list[int]:
    """Evaluate at each (time, pod count, cpu per pod), feeding the size and history on."""
    history = AutoscaleHistory()
    sizes = []
    current = plan[0][1]
    for t, _, usage in plan:
        d = run([pod(f"p{i}", cpu=usage, ready_changed=0.0, started=0.0)
                 for i in range(current)], current=current, behavior=behavior,
                history=history, now=t, **kw)
        history = AutoscaleHistory.from_data(d.history.to_data())  # persisted as plain data
        current = d.desired
        sizes.append(current)
    return sizes


def test_scale_down_waits_for_the_highest_recommendation_in_the_window() -> None:
    behavior = Behavior.from_spec(None)  # Kubernetes defaults: down window 300 s
    # t=1000: 10 pods at target (keep 10); t=1100: 20 % -> wants 4, but 10 is in the window;
    # t=1301: the 10 has left the window, the 4 remains
    sizes = steps(behavior, [(1000.0, 10, "500m"), (1100.0, 10, "200m"),
                             (1301.0, 10, "200m")])
    assert sizes == [10, 10, 4]


def test_stabilized_condition_is_reported() -> None:
    history = AutoscaleHistory.from_data({"recommendations": [{"time": NOW - 10,
                                                               "replicas": 10}]})
    d = run([pod(f"p{i}", cpu="200m") for i in range(10)], current=10, history=history,
            behavior=Behavior.from_spec(None))
    assert d.desired == 10
    assert d.condition("AbleToScale").reason == "ScaleDownStabilized"  # type: ignore[union-attr]


def test_scale_up_window_takes_the_lowest_recent_recommendation() -> None:
    behavior = Behavior.from_spec({"scaleUp": {"stabilizationWindowSeconds": 60}})
    sizes = steps(behavior, [(1000.0, 4, "500m"), (1030.0, 4, "1"), (1061.0, 4, "1")])
    assert sizes == [4, 4, 8]


# --- rate policies -----------------------------------------------------------------------------

def up_rules(policies: list[dict[str, Any]], select: str = "Max") -> Behavior:
    return Behavior.from_spec({"scaleUp": {"policies": policies, "selectPolicy": select}})


def test_pods_policy_limits_each_period() -> None:
    behavior = up_rules([{"type": "Pods", "value": 2, "periodSeconds": 60}])
    # 4 pods at 250 % want 20; +2 per 60 s: 6, then nothing more until the +2 leaves the period
    sizes = steps(behavior, [(1000.0, 4, "1250m"), (1030.0, 4, "1250m"),
                             (1061.0, 4, "1250m")])
    assert sizes == [6, 6, 8]


def test_scale_up_limit_condition() -> None:
    behavior = up_rules([{"type": "Pods", "value": 2, "periodSeconds": 60}])
    d = run([pod(n, cpu="1250m") for n in "abcd"], current=4, behavior=behavior)
    limited = d.condition("ScalingLimited")
    assert limited is not None and (limited.status, limited.reason) == ("True", "ScaleUpLimit")


@pytest.mark.parametrize(("select", "expected"), [("Max", 6), ("Min", 5), ("Disabled", 4)])
def test_select_policy_up(select: str, expected: int) -> None:
    behavior = up_rules([{"type": "Pods", "value": 1, "periodSeconds": 60},
                         {"type": "Percent", "value": 50, "periodSeconds": 60}], select)
    d = run([pod(n, cpu="1250m") for n in "abcd"], current=4, behavior=behavior)
    assert d.desired == expected


@pytest.mark.parametrize(("select", "expected"), [("Max", 5), ("Min", 7), ("Disabled", 10)])
def test_select_policy_down(select: str, expected: int) -> None:
    behavior = Behavior.from_spec({"scaleDown": {
        "stabilizationWindowSeconds": 0, "selectPolicy": select,
        "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60},
                     {"type": "Pods", "value": 3, "periodSeconds": 60}]}})
    d = run([pod(f"p{i}", cpu="50m") for i in range(10)], current=10, behavior=behavior)
    assert d.desired == expected


def test_default_scale_up_is_the_larger_of_double_and_plus_four() -> None:
    behavior = Behavior.from_spec(None)
    assert run([pod("a", cpu="5")], current=1, behavior=behavior).desired == 5   # 1 + 4
    pods = [pod(f"p{i}", cpu="5") for i in range(6)]
    assert run(pods, current=6, behavior=behavior).desired == 12                 # 6 x 2


def test_percent_policy_counts_from_the_period_start() -> None:
    behavior = up_rules([{"type": "Percent", "value": 50, "periodSeconds": 60}])
    sizes = steps(behavior, [(1000.0, 4, "2"), (1030.0, 4, "2"), (1061.0, 4, "2")])
    assert sizes == [6, 6, 9]  # 4 -> 6; still 6 (period started at 4); then 6 x 1.5


# --- spec parsing --------------------------------------------------------------------------------

def test_metrics_from_spec() -> None:
    spec = [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {
                "type": "AverageValue", "averageValue": "512Mi"}}}]
    assert MetricTarget.from_spec(spec) == (
        MetricTarget(resource="cpu", type="Utilization", value=Fraction(60)),
        MetricTarget(resource="memory", type="AverageValue", value=Fraction(512 * 2**20)))
    assert MetricTarget.from_spec(None) == (
        MetricTarget(resource="cpu", type="Utilization", value=Fraction(80)),)


@pytest.mark.parametrize(("spec", "message"), [
    ([{"type": "Pods", "pods": {}}], r"spec.metrics\[0\].type: 'Pods' is not supported"),
    ([{"type": "Resource", "resource": {"name": "gpu", "target": {}}}],
     r"spec.metrics\[0\].resource.name: 'gpu'"),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Value", "value": "1"}}}], r"target.type: 'Value' is not supported"),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 0}}}], "averageUtilization: must be"),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "AverageValue", "averageValue": "lots"}}}], "averageValue: not a quantity"),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 50, "averageValue": "1"}}}],
     r"target.averageValue: not supported"),
])
def test_bad_metrics_name_the_field(spec: Any, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        MetricTarget.from_spec(spec, path="policies/hpa.yaml", obj="FederatedHPA shop/web")
    assert "policies/hpa.yaml" in str(err.value) and "FederatedHPA shop/web" in str(err.value)


def test_behavior_defaults_and_partial_rules() -> None:
    b = Behavior.from_spec({"scaleDown": {"stabilizationWindowSeconds": 60}})
    assert b.scale_down.stabilization_seconds == 60
    assert b.scale_down.policies == Behavior().scale_down.policies
    assert b.scale_up == Behavior().scale_up
    assert Behavior().scale_down.stabilization_seconds == 300
    assert [p.value for p in Behavior().scale_up.policies] == [100, 4]


@pytest.mark.parametrize(("spec", "message"), [
    ({"scaleUp": {"tolerance": "0.05"}}, r"spec.behavior.scaleUp.tolerance: not supported"),
    ({"scaleUp": {"selectPolicy": "Sometimes"}}, "selectPolicy: 'Sometimes'"),
    ({"scaleDown": {"stabilizationWindowSeconds": 4000}}, "between 0 and 3600"),
    ({"scaleDown": {"policies": []}}, "policies: must be a non-empty list"),
    ({"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]}},
     r"scaleDown.policies\[0\].periodSeconds: must be between 1 and 1800"),
    ({"scaleDown": {"policies": [{"type": "Share", "value": 1, "periodSeconds": 5}]}},
     r"policies\[0\].type: 'Share'"),
    ({"sideways": {}}, "spec.behavior.sideways: not supported"),
])
def test_bad_behavior_names_the_field(spec: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Behavior.from_spec(spec)


def test_history_round_trips_and_rejects_garbage() -> None:
    d = run([pod(n, cpu="1") for n in "ab"], current=2, behavior=Behavior.from_spec(None))
    data = d.history.to_data()
    assert data["recommendations"] == [{"time": NOW, "replicas": 4}]
    assert data["scaleUpEvents"] == [{"time": NOW, "change": 2}]
    assert AutoscaleHistory.from_data(data) == d.history
    with pytest.raises(InputError, match=r"recommendations\[0\].replicas"):
        AutoscaleHistory.from_data({"recommendations": [{"time": 1, "replicas": "x"}]})


def test_history_forgets_what_no_window_or_period_needs() -> None:
    behavior = Behavior.from_spec(None)
    sizes = steps(behavior, [(float(t), 1, "1") for t in range(0, 3600, 15)],
                  max_replicas=3)
    assert sizes[-1] == 3
    history = AutoscaleHistory()
    current = 3
    for t in range(0, 3600, 15):
        d = run([pod(f"p{i}", cpu="500m") for i in range(current)], current=current,
                behavior=behavior, history=history, now=float(t))
        history = d.history
    # down window 300 s at one evaluation per 15 s: at most 21 remembered recommendations
    assert len(history.recommendations) <= 21


def test_calibration_scales_the_proposal_to_the_whole_workload() -> None:
    # the pods reported are half the workload's replicas (Karmada's calibration 0.5):
    # 100 % against 50 % over 2 pods -> 4, over the whole -> 8
    pods = [pod(n, cpu="1") for n in "ab"]
    assert run(pods, current=4, calibration=Fraction(1, 2)).desired == 8
    with pytest.raises(InputError, match="calibration"):
        run(pods, current=4, calibration=0)
