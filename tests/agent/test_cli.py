"""`gitfleet agent` arguments: durations, feature gates, shares, a missing kubeconfig."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gitfleet.cli import main
from gitfleet.cli.agent_cmd import feature_gates, share
from gitfleet.durations import duration_arg as duration


def test_durations_gates_and_shares() -> None:
    assert duration("10s") == 10.0 and duration("500ms") == 0.5 and duration("2m") == 120.0
    assert duration("3") == 3.0
    assert feature_gates("Recovery=true,AppPusher=false") == {"Recovery": True,
                                                              "AppPusher": False}
    assert feature_gates("Recovery") == {"Recovery": True}
    assert share("50%") == 0.5 and share("0.2") == 0.2
    for bad in (lambda: duration("ten"), lambda: feature_gates("Bogus=true"),
                lambda: feature_gates("Recovery=yes"), lambda: share("150%")):
        with pytest.raises(argparse.ArgumentTypeError):
            bad()


def test_missing_kubeconfig_is_a_clear_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["agent", "--repo", "file:///nowhere", "--cluster", "c1", "--once",
                 "--kubeconfig", str(tmp_path / "absent"), "--workdir", str(tmp_path / "w")])
    assert code == 2  # an input error
    assert "absent" in capsys.readouterr().err


def test_git_backoff_cap_is_a_duration_with_a_10s_default() -> None:
    from gitfleet.cli import build_parser

    base = ["agent", "--repo", "file:///x", "--cluster", "c1"]
    assert build_parser().parse_args(base).git_backoff_max == 10.0
    assert build_parser().parse_args([*base, "--git-backoff-max", "30s"]).git_backoff_max == 30.0
    with pytest.raises(SystemExit):
        build_parser().parse_args([*base, "--git-backoff-max", "soon"])
