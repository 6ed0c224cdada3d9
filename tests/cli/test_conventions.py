"""Conventions every command keeps: documented exit codes, Go-style durations, -v and
--log-format on either side of the subcommand, JSON log lines, `version`, and a progress line
only on a terminal."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path

import pytest

from gitfleet import __version__
from gitfleet.cli import build_parser, main
from gitfleet.cli.progress import progress
from tests.cli.fleetrepo import example_repo
from tests.harness import ROOT


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["diff", "--help"], ["get", "--help"]):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 0
        out = capsys.readouterr().out
        assert "exit codes:" in out and "2  usage or input error" in out, argv


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    # run from this checkout: the release and the checkout's commit
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == f"gitfleet {__version__} (commit {head[:12]})"
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"gitfleet {__version__} (commit {head[:12]})"
    assert main(["version", "-o", "json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert (said["gitfleet"], said["commit"]) == (__version__, head)
    # one place: the installed distribution's version is the package's
    assert metadata.version("gitfleet") == __version__


def test_version_outside_a_checkout_says_the_commit_recorded_at_install(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "gitfleet", site / "gitfleet",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "gitfleet" / "COMMIT").write_text("0123456789abcdef0123456789abcdef01234567\n")
    run = subprocess.run([sys.executable, "-m", "gitfleet", "--version"], capture_output=True,
                         text=True, cwd=site)
    assert run.stdout.strip() == f"gitfleet {__version__} (commit 0123456789ab)", run.stderr
    (site / "gitfleet" / "COMMIT").unlink()
    bare = subprocess.run([sys.executable, "-m", "gitfleet", "version"], capture_output=True,
                          text=True, cwd=site)
    assert bare.stdout.strip() == f"gitfleet {__version__}", bare.stderr


def test_verbosity_and_log_format_on_either_side(tmp_path: Path) -> None:
    parser = build_parser()
    before = parser.parse_args(["-v", "validate", "."])
    after = parser.parse_args(["validate", ".", "-vv", "--log-format", "json"])
    assert before.verbose == 1 and after.verbose_sub == 2 and after.log_format_sub == "json"
    agent = parser.parse_args(["agent", "--repo", "r", "--cluster", "c", "--interval", "1m30s",
                               "--heartbeat-interval", "2m"])
    assert agent.interval == 90.0 and agent.heartbeat_interval == 120.0


@pytest.mark.parametrize("argv", [
    ["validate", "."], ["-v", "validate", ".", "-vv", "--log-format", "json"],
    ["--log-format", "json", "get", "clusters", "-o", "wide"], ["--log-format=text", "status"],
    ["agent", "--repo", "r", "--cluster", "c", "--interval", "1m30s"],
    ["hub", "--repo", "r", "--once"], ["diff", "a", "b", "--format", "markdown"],
])
def test_a_command_line_parses_the_same_with_only_its_command_imported(argv: list[str]) -> None:
    from gitfleet.cli import named_command

    assert named_command(argv) == next(word for word in argv
                                       if word in ("validate", "get", "status", "agent", "hub",
                                                   "diff"))
    only, full = build_parser(only=named_command(argv)), build_parser()
    assert vars(only.parse_args(argv)).keys() == vars(full.parse_args(argv)).keys()
    assert {k: v for k, v in vars(only.parse_args(argv)).items() if k != "run"} == \
        {k: v for k, v in vars(full.parse_args(argv)).items() if k != "run"}
    sub = named_command(argv)
    assert only._subparsers._group_actions[0].choices[sub].format_help() == \
        full._subparsers._group_actions[0].choices[sub].format_help()


@pytest.mark.parametrize("argv", [[], ["-h"], ["--version"], ["--verb", "validate"],
                                  ["valdate", "."], ["-x", "validate"]])
def test_anything_else_gets_the_whole_command_line(argv: list[str]) -> None:
    from gitfleet.cli import named_command

    assert named_command(argv) is None


def test_hub_logs_one_json_object_per_line_at_info_by_default(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    proc = subprocess.run([sys.executable, "-m", "gitfleet", "hub", "--repo", str(repo),
                           "--once", "--interval", "1m30s", "--log-format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.strip()]
    assert lines, "the hub logs at info by default"
    assert all({"time", "level", "logger", "msg"} <= set(line) for line in lines)
    render = next(line for line in lines if line["msg"] == "render")
    assert render["level"] == "info" and render["clusters"] in (3, "3")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_only_on_a_terminal() -> None:
    tty = _Terminal()
    release = threading.Event()
    with progress("rendering .", stream=tty, after=0.0, every=0.01):
        for _ in range(500):  # until the line has been drawn (at most 5 s)
            if "rendering ." in tty.getvalue():
                break
            release.wait(0.01)
    text = tty.getvalue()
    assert "\rrendering ." not in text and "rendering ." in text
    assert text.endswith("\r\033[K")  # erased at the end
    pipe = io.StringIO()
    with progress("rendering .", stream=pipe, after=0.0, every=0.01):
        release.wait(0.05)
    assert pipe.getvalue() == ""


def test_quick_work_shows_no_progress_line() -> None:
    tty = _Terminal()
    with progress("rendering .", stream=tty, after=60.0):
        pass
    assert tty.getvalue() == ""
