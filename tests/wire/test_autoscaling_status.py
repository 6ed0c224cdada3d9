"""The autoscalers' status files on the fleet-status branch (`gitfleet.wire.autoscalingstatus`):
the hub writes every version byte for byte as before the wire module existed (a golden file
written by the hub before the change), the reader reads back exactly what was written, and a
field the reader does not know is an error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.errors import InputError
from gitfleet.state.git import Git
from gitfleet.wire.autoscalingstatus import (
    CRON_DIR,
    FHPA_DIR,
    read_cron_status,
    read_fhpa_status,
)
from gitfleet.wire.emit import emit
from tests.harness import commit, example_repo
from tests.hub.test_autoscaling import (
    CRON_ON_FHPA,
    CRON_ON_WORKLOAD,
    FHPA,
    FLEET_STATUS,
    new_hub,
    report,
    report_all,
)

# written by the hub of main ca3ac13 (before the wire module) from every_version() below
GOLDEN = Path(__file__).parent / "data" / "autoscaling-status.golden"
ORPHAN = CRON_ON_FHPA.replace("name: web}", "name: gone}").replace("office-hours", "orphan")


def autoscaled_fleet(path: Path) -> Path:
    """The worked example fleet (with the shop's FederatedHPA and cron rules) plus a
    FederatedHPA and cron rules on web (one on a workload, one on a missing FederatedHPA), run
    by a hub for a virtual day: a repo whose fleet-status branch holds the autoscalers' files
    in every shape (conditions, waiting for clusters, a scale, cron successes and failures)."""
    from gitfleet.clock import FakeClock

    repo = example_repo(path)
    commit(repo, "autoscale web", {"policies/web/fhpa.yaml": FHPA,
                                   "policies/web/cron.yaml": CRON_ON_FHPA,
                                   "policies/web/nightly.yaml": CRON_ON_WORKLOAD,
                                   "policies/web/orphan.yaml": ORPHAN})
    g, clock = Git(repo), FakeClock()
    hub = new_hub(repo, clock)
    for step, (advance, cpu_m) in enumerate([(0, 50), (8 * 3600 + 20, 50), (600, 400),
                                             (3600, 5), (14 * 3600, 5)]):
        clock.advance(advance)
        if step == 3:                      # the clusters run the last scale-out
            report(g, "prod-east", clock, pods=8, cpu_m=cpu_m)
            report(g, "prod-west", clock, pods=4, cpu_m=cpu_m)
        else:
            report_all(g, clock, cpu_m=cpu_m)
        hub.run_once()
    return repo


def every_version(tmp_path: Path) -> dict[str, bytes]:
    """Every version of every autoscaler status file the hub wrote in `autoscaled_fleet`,
    keyed "<commit n> <path>"."""
    g = Git(autoscaled_fleet(tmp_path / "fleet"))
    out: dict[str, bytes] = {}
    commits = g.run("rev-list", "--reverse", FLEET_STATUS).decode().split()
    for n, sha in enumerate(commits):
        for path, blob in sorted(g.ls_tree(sha, FHPA_DIR, CRON_DIR).items()):
            out[f"{n} {path}"] = g.read_objects([blob])[blob]
    return out


def golden(files: dict[str, bytes]) -> bytes:
    return b"".join(b"=== %s\n%s" % (k.encode(), v) for k, v in files.items())


def test_the_hub_writes_the_status_files_byte_for_byte_as_before(tmp_path: Path) -> None:
    files = every_version(tmp_path)
    kinds = {k.split()[1].rsplit("/", 1)[0] for k in files}
    assert {"autoscaling/federatedhpas/web", "autoscaling/federatedhpas/shop",
            "autoscaling/cronfederatedhpas/web", "autoscaling/cronfederatedhpas/shop"} <= kinds
    text = golden(files)
    for needle in (b"failedExecutions:\n  - rule: morning", b"appliedMinReplicas: 12",
                   b"appliedReplicas: 3", b"lastScaleTime: \"2026-", b"WaitingForClusters"):
        assert needle in text, needle             # the golden file covers each shape
    assert text == GOLDEN.read_bytes()


def test_the_reader_reads_back_exactly_what_the_hub_wrote(tmp_path: Path) -> None:
    for key, data in every_version(tmp_path).items():
        path = key.split()[1]
        value = read_fhpa_status(data, path) if path.startswith(FHPA_DIR) else \
            read_cron_status(data, path)
        assert emit(value.to_doc()).encode() == data, path
        assert value.path == path


def test_an_unknown_field_is_an_error_naming_it_and_the_file(tmp_path: Path) -> None:
    files = every_version(tmp_path)
    fhpa = next(v for k, v in files.items() if FHPA_DIR in k)
    with pytest.raises(InputError) as err:
        read_fhpa_status(fhpa.replace(b"currentReplicas:", b"curentReplicas:"), "x.yaml")
    assert "curentReplicas (did you mean currentReplicas?)" in err.value.format()
    assert "x.yaml" in err.value.format()
    cron = next(v for k, v in files.items() if "cronfederatedhpas/web/office-hours" in k
                and b"scheduleTime" in v)
    with pytest.raises(InputError) as err:
        read_cron_status(cron.replace(b"scheduleTime:", b"schedule_time:", 1), "y.yaml")
    assert "schedule_time (did you mean scheduleTime?)" in err.value.format()
    with pytest.raises(InputError) as err:
        read_fhpa_status(fhpa.replace(b"minReplicas: ", b"minReplicas: x"), "z.yaml")
    assert "minReplicas" in err.value.format()


def test_get_names_a_status_file_it_cannot_read_instead_of_skipping_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gitfleet.fleetview.autoscaling import fhpa_rows, read_autoscalers
    from gitfleet.layout import Branches
    from gitfleet.state.git import RefUpdate

    g = Git(autoscaled_fleet(tmp_path / "fleet"))
    head = g.resolve(FLEET_STATUS)
    assert head is not None
    path = "autoscaling/federatedhpas/web/web.yaml"
    files = {p: g.read_objects([b])[b] for p, b in g.ls_tree(head, "autoscaling/").items()}
    files[path] = files[path].replace(b"desiredReplicas:", b"desiredReplica:")
    bad = g.commit(g.write_tree(files), [head], "a hand edit")
    g.update_refs([RefUpdate(FLEET_STATUS, bad, head)])
    found = read_autoscalers(g, Branches())
    assert [(s.namespace, s.name) for s in found.fhpa] == [("shop", "cart")]
    [(where, error)] = found.unreadable
    assert where == path and "desiredReplica (did you mean desiredReplicas?)" in error
    assert [getattr(r, "fields", {}).get("path") for r in caplog.records
            if r.getMessage() == "autoscaler status unreadable"] == [path]
    assert [r["name"] for r in fhpa_rows(found, now=0.0)] == ["cart"]
