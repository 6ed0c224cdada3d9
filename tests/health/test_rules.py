"""`fleet.yaml: health:` rules: checked at load, each problem at its line; shipped in
`cluster.yaml`; read back by the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitfleet.agent.desired import parse_cluster_tree
from gitfleet.health import HealthRule, HealthRules, judge
from gitfleet.model.loader import load_fleet, load_settings

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


CHEATSHEET = (Path(__file__).parent / "fleets" / "cheatsheet.yaml").read_bytes()


def _live(api_version: str, kind: str, status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": "x", "namespace": "a", "generation": 1},
            "spec": spec, "status": {"observedGeneration": 1, **status}}


def _synced(value: str) -> dict[str, Any]:
    return {"conditions": [{"type": "Synced", "status": value}]}


def _ready(value: str) -> dict[str, Any]:
    return {"conditions": [{"type": "Ready", "status": value}]}


def test_one_broken_rule_is_an_error_at_its_line_and_the_others_still_judge() -> None:
    fleet = load_fleet({"fleet.yaml": CHEATSHEET, "clusters/east.yaml": CLUSTER})
    # the HelmRelease rule misses its closing parenthesis (line 39; the end of the line)
    assert [p.format() for p in fleet.errors] == [
        "fleet.yaml:39: FleetSettings: health[7].current: CEL: Syntax error: missing ')' at "
        "'<EOF>' (column 79)"]
    (warning,) = [p.format() for p in fleet.warnings if "health" in p.message]
    assert "11 rule(s) of this fleet.yaml that load are in force" in warning
    rules = fleet.settings.health
    assert rules.for_kind("helm.toolkit.fluxcd.io", "HelmRelease") is None
    said = {
        ("bitnami.com/v1alpha1", "SealedSecret", "Degraded"): _synced("False"),
        ("bitnami.com/v1alpha1", "SealedSecret", "Healthy"): _synced("True"),
        ("ceph.rook.io/v1", "CephCluster", "Degraded"): {"ceph": {"health": "HEALTH_ERR"}},
        ("ceph.rook.io/v1", "CephCluster", "Healthy"): {"ceph": {"health": "HEALTH_WARN"}},
        ("ceph.rook.io/v1", "CephCluster", "Progressing"): {"phase": "Progressing"},
        ("cert-manager.io/v1", "Certificate", "Progressing"): {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "Issuing", "status": "True"}]},
        ("cert-manager.io/v1", "ClusterIssuer", "Degraded"): _ready("False"),
        ("cert-manager.io/v1", "Issuer", "Progressing"): {},
        ("external-secrets.io/v1", "ExternalSecret", "Degraded"): _ready("False"),
        ("cluster.x-k8s.io/v1beta1", "Cluster", "Healthy"): {"phase": "Provisioned"},
        ("postgresql.cnpg.io/v1", "Cluster", "Degraded"): {"phase": "Failed to create pods"},
        ("kyverno.io/v1", "ClusterPolicy", "Healthy"): _ready("True"),
    }
    for (api_version, kind, want), status in said.items():
        verdict = judge(_live(api_version, kind, status), rules=rules)
        assert str(verdict.health) == want, (kind, status, verdict)
    # extension libraries by their qualified names: sets, base64, math and lists
    spread = _live("zones.example.com/v1", "Spread", {"readyZones": ["a", "b", "c"]},
                   zones=["a", "c"])
    assert str(judge(spread, rules=rules).health) == "Healthy"
    spread["status"]["readyZones"] = ["a"]
    assert str(judge(spread, rules=rules).health) == "Progressing"
    bundle = _live("trust.example.com/v1", "Bundle", {"caBundle": "LS0tLS1CRUdJTg=="})
    assert str(judge(bundle, rules=rules).health) == "Healthy"
    shards = _live("shards.example.com/v1", "ShardSet", {"readyShards": 3}, shards=3)
    assert str(judge(shards, rules=rules).health) == "Healthy"
    # the rules that load reach the agents
    from gitfleet import yamlio
    from gitfleet.render.core import render

    files = {"cluster.yaml": render(fleet).files["clusters/east/cluster.yaml"]}
    assert len(yamlio.load_one(files["cluster.yaml"], "cluster.yaml")["healthRules"]) == 11
    desired = parse_cluster_tree(files, cluster_commit="0" * 40)
    assert desired.health_rules == rules and desired.errors == ()
    issuer = _live("cert-manager.io/v1", "ClusterIssuer", _ready("True"))
    assert judge(issuer, rules=desired.health_rules).message == \
        "health rule cert-manager.io/*: current holds"


def test_the_last_good_rule_of_a_broken_kind_stays_in_force(tmp_path: Path) -> None:
    """As the hub and `gitfleet render` read a fleet repo: fleet.yaml's history in Git."""
    from gitfleet.state.lastgood import load_keeping
    from tests.harness import commit, git

    repo = tmp_path / "fleet"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    helm = ("- apiVersion: helm.toolkit.fluxcd.io/v2\n  kind: HelmRelease\n"
            "  current: status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')\n"
            "- group: example.com\n  kind: Gone\n  current: 'false'\n")
    commit(repo, "rules", {"fleet.yaml": f"health:\n{helm}", "clusters/east.yaml":
                           CLUSTER.decode()})
    commit(repo, "the cheatsheet", {"fleet.yaml": CHEATSHEET.decode()})
    files = {p: (repo / p).read_bytes() for p in ("fleet.yaml", "clusters/east.yaml")}
    fleet = load_keeping(files, str(repo), "HEAD")
    assert [p.line for p in fleet.errors] == [39]
    rules = fleet.settings.health
    release = _live("helm.toolkit.fluxcd.io/v2", "HelmRelease", _ready("True"))
    assert str(judge(release, rules=rules).health) == "Healthy"
    assert judge(release, rules=rules).message == \
        "health rule helm.toolkit.fluxcd.io/HelmRelease: current holds"
    assert rules.for_kind("bitnami.com", "SealedSecret") is not None
    (warning,) = [p.message for p in fleet.warnings if "health" in p.message]
    assert "and 2 of commit " in warning, warning
    assert "(helm.toolkit.fluxcd.io/HelmRelease, example.com/Gone)" in warning


def test_validate_fails_on_a_broken_rule(tmp_path: Path) -> None:
    from tests.harness import gitfleet_here

    (tmp_path / "fleet.yaml").write_bytes(CHEATSHEET)
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "east.yaml").write_bytes(CLUSTER)
    run = gitfleet_here("validate", str(tmp_path))
    assert run.returncode != 0
    assert "fleet.yaml:39" in run.stdout + run.stderr, run.stdout + run.stderr


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
