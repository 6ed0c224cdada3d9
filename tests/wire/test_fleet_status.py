"""The fleet-status branch's per-cluster rows (`clusters/<name>.yaml`, kind ClusterSummary) and
Subscription files (kind SubscriptionStatus), `gitfleet.wire.fleetstatus`: the hub writes every
version byte for byte as before they became wire values (a golden file written by the hub of
main d0635fd), and the readers read back exactly what was written, refusing a field they do not
know."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.errors import InputError
from gitfleet.state.git import Git
from gitfleet.wire.emit import emit
from gitfleet.wire.fleetstatus import read_cluster_summary, read_subscription_status
from tests.wire.test_autoscaling_status import autoscaled_fleet

FLEET_STATUS = "refs/heads/gitfleet/fleet-status"
# written by the hub of main d0635fd (before the row was a wire value) from every_file() below
GOLDEN = Path(__file__).parent / "data" / "fleet-status.golden"


def every_file(tmp_path: Path) -> dict[str, bytes]:
    """Every version of every cluster row and Subscription file the hub wrote while running
    the autoscaled example fleet for a virtual day, keyed "<commit n> <path>"."""
    g = Git(autoscaled_fleet(tmp_path / "fleet"))
    out: dict[str, bytes] = {}
    for n, sha in enumerate(g.run("rev-list", "--reverse", FLEET_STATUS).decode().split()):
        listing = g.ls_tree(sha, "clusters/", "subscriptions/")
        blobs = g.read_objects(listing.values())
        for path, blob in sorted(listing.items()):
            out[f"{n} {path}"] = blobs[blob]
    return out


def test_the_fold_writes_the_rows_byte_for_byte_as_before(tmp_path: Path) -> None:
    files = every_file(tmp_path)
    text = b"".join(b"=== %s\n%s" % (k.encode(), v) for k, v in files.items())
    assert b"condition: Ready" in text and b"condition: NeverReported" in text
    assert text == GOLDEN.read_bytes()


def test_the_reader_reads_back_every_row_exactly(tmp_path: Path) -> None:
    rows = {k: v for k, v in every_file(tmp_path).items() if " clusters/" in k}
    assert len(rows) >= 3
    for key, data in rows.items():
        path = key.split()[1]
        summary = read_cluster_summary(data, path)
        assert emit(summary.to_doc()).encode() == data, path
        assert summary.path == path


def test_an_unknown_or_misshapen_field_is_an_error_naming_it(tmp_path: Path) -> None:
    data = next(v for k, v in every_file(tmp_path).items() if k.endswith("prod-east.yaml"))
    with pytest.raises(InputError) as err:
        read_cluster_summary(data.replace(b"evictions:", b"evictons:"), "c.yaml")
    assert "evictons (did you mean evictions?)" in err.value.format()
    with pytest.raises(InputError) as err:
        read_cluster_summary(data.replace(b"  livez:", b"  lives:"), "c.yaml")
    assert "lives (did you mean livez?)" in err.value.format()
    with pytest.raises(InputError) as err:
        read_cluster_summary(data.replace(b"ready: true", b"ready: yes-ish"), "c.yaml")
    assert "ready must be true or false" in err.value.format()


def test_the_reader_reads_back_every_subscription_file_exactly(tmp_path: Path) -> None:
    files = {k: v for k, v in every_file(tmp_path).items() if " subscriptions/" in k}
    assert len(files) >= 5
    for key, data in files.items():
        status = read_subscription_status(data, key.split()[1])
        assert emit(status.to_doc()).encode() == data, key
        assert status.bound == len(status.rows)
        assert status.desired == sum(r.desired for r in status.rows)
    web = read_subscription_status(files["4 subscriptions/web/web.yaml"], "web.yaml")
    assert [r.cluster for r in web.rows] == ["prod-east", "prod-west"]
    with pytest.raises(InputError) as err:
        read_subscription_status(files["4 subscriptions/web/web.yaml"].replace(
            b"  sourceCommit:", b"  sourceComit:"), "web.yaml")
    assert "sourceComit (did you mean sourceCommit?)" in err.value.format()
