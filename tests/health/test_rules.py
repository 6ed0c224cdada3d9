"""`fleet.yaml: health:` rules: checked at load, each problem at its line; shipped in
`cluster.yaml`; read back by the agent."""

from __future__ import annotations

from gitfleet.agent.desired import parse_cluster_tree
from gitfleet.health import HealthRule, HealthRules
from gitfleet.model.loader import load_settings

GOOD = b"""\
apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
health:
- apiVersion: cert-manager.io/v1
  kind: Certificate
  current: status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')
  failed: |
    status.conditions.exists(e,
      e.type == 'Ready' && e.status == 'False')
- group: example.com
  kind: Widget
  current: "status.phase == 'Running'"
"""


def _problems(text: bytes) -> list[str]:
    return [p.format() for p in load_settings({"fleet.yaml": text})[1]]


def test_rules_load_by_group_and_kind() -> None:
    settings, problems = load_settings({"fleet.yaml": GOOD})
    assert problems == []
    rule = settings.health.for_kind("cert-manager.io", "Certificate")
    assert rule is not None and rule.failed.startswith("status.conditions.exists(e,\n")
    assert settings.health.for_kind("example.com", "Widget") == HealthRule(
        "example.com", "Widget", current="status.phase == 'Running'")
    assert settings.health.for_kind("", "Certificate") is None


def test_a_cel_syntax_error_is_reported_at_its_line() -> None:
    bad = GOOD.replace(b"e.type == 'Ready' && e.status == 'False')",
                       b"e.type == 'Ready' && && e.status == 'False')")
    (problem,) = _problems(bad)
    assert problem.startswith("fleet.yaml:9: FleetSettings: health[0].failed: CEL: Syntax "
                              "error: "), problem
    assert problem.endswith("(column 28)"), problem  # where the second && stands in the file
    bad = GOOD.replace(b"current: \"status.phase == 'Running'\"",
                       b"current: \"status.phase = 'Running'\"")
    (problem,) = _problems(bad)
    assert problem.startswith("fleet.yaml:12: FleetSettings: health[1].current: CEL: ")
    assert problem.endswith("(column 26)"), problem  # where the lone = stands in the file


def test_unknown_fields_missing_parts_and_duplicates_are_errors() -> None:
    bad = GOOD.replace(b"  failed: |", b"  faild: |").replace(
        b"- group: example.com\n  kind: Widget", b"- group: cert-manager.io\n  kind: Certificate")
    assert _problems(bad) == [
        "fleet.yaml:7: FleetSettings: health[0].faild: unknown field faild "
        "(did you mean failed?)",
        "fleet.yaml:11: FleetSettings: health[1].kind: a second rule for "
        "cert-manager.io/Certificate (the first is entry 0)"]
    assert _problems(b"health:\n- kind: Widget\n  current: 'true'\n") == [
        "fleet.yaml:2: FleetSettings: health[0]: rule for Widget needs an apiVersion or a "
        "group (\"\" for the core group)"]
    assert _problems(b"health:\n- {group: a.io, kind: Widget}\n") == [
        "fleet.yaml:2: FleetSettings: health[0]: rule for a.io/Widget needs a current "
        "expression"]


def test_a_bad_rule_leaves_no_rules_in_force() -> None:
    settings, problems = load_settings({"fleet.yaml": GOOD.replace(b"kind: Widget", b"")})
    assert problems and settings.health == HealthRules()


def test_the_agent_reads_the_rules_from_cluster_yaml() -> None:
    settings, _ = load_settings({"fleet.yaml": GOOD})
    from gitfleet import yamlio

    files = {"cluster.yaml": yamlio.dump({"name": "c1", "healthRules":
                                          settings.health.to_list()}).encode()}
    desired = parse_cluster_tree(files, cluster_commit="0" * 40)
    assert desired.health_rules == settings.health and desired.errors == ()
    files = {"cluster.yaml": b"name: c1\nhealthRules:\n- {group: a, kind: B, current: '('}\n"}
    desired = parse_cluster_tree(files, cluster_commit="0" * 40)
    assert desired.health_rules == HealthRules()
    assert desired.errors and "health[0].current: CEL: Syntax error" in desired.errors[0]


CLUSTER = b"""\
apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata: {name: east, namespace: gitfleet-east, labels: {env: prod}}
spec: {clusterId: 55555555-5555-4555-8555-555555555555, syncMode: Pull}
"""


def test_the_hub_ships_the_rules_in_every_cluster_yaml() -> None:
    from gitfleet import yamlio
    from gitfleet.model.loader import load_fleet
    from gitfleet.render.core import render

    fleet = load_fleet({"fleet.yaml": GOOD, "clusters/east.yaml": CLUSTER})
    assert not fleet.errors
    shipped = yamlio.load_one(render(fleet).files["clusters/east/cluster.yaml"], "cluster.yaml")
    assert HealthRules.from_list(shipped["healthRules"]) == fleet.settings.health
    assert len(shipped["healthRules"]) == 2
    # without rules, cluster.yaml says nothing about them
    plain = load_fleet({"clusters/east.yaml": CLUSTER})
    assert "healthRules" not in yamlio.load_one(
        render(plain).files["clusters/east/cluster.yaml"], "cluster.yaml")


def test_a_fleet_wide_progress_timeout_reaches_the_agents_judge() -> None:
    from gitfleet import yamlio
    from gitfleet.health import judge
    from gitfleet.model.loader import load_fleet
    from gitfleet.render.core import render

    fleet = load_fleet({"fleet.yaml": b"healthProgressTimeout: 2m\n",
                        "clusters/east.yaml": CLUSTER})
    assert not fleet.errors and fleet.settings.health.progress_timeout == 120
    files = {"cluster.yaml": render(fleet).files["clusters/east/cluster.yaml"]}
    assert yamlio.load_one(files["cluster.yaml"], "cluster.yaml")["healthProgressTimeout"] == "2m"
    rules = parse_cluster_tree(files, cluster_commit="0" * 40).health_rules
    cert = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "tls", "generation": 1},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Pending",
                                       "lastTransitionTime": "2026-03-01T12:00:00Z"}]}}
    start = 1772366400.0  # 2026-03-01T12:00:00Z
    assert str(judge(cert, rules=rules, now=start + 100).health) == "Progressing"
    assert str(judge(cert, rules=rules, now=start + 130).health) == "Degraded"
    assert str(judge(cert, now=start + 130).health) == "Progressing"  # the default: 10m
    assert _problems(b"healthProgressTimeout: soon\n")  # not a duration: an error
