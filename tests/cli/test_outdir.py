"""`render --out` and `dashboard --out` never write or delete outside their folder: a symbolic
link at the folder, at a subfolder or at a file they write or remove is refused with an error
naming it, and nothing outside changes (issue 30: an earlier export folder holding
`data -> /elsewhere` and `index.html -> /elsewhere/file` had 131 files written outside and the
file overwritten; a `.gitfleet-render` entry under a linked folder deleted a file outside)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gitfleet.cli import main, outdir
from gitfleet.cli.outdir import MARKER
from tests.cli.fleetrepo import example_repo


def render(repo: Path, out: Path) -> list[str]:
    return ["render", str(repo), "--out", str(out)]


def dashboard(repo: Path, out: Path) -> list[str]:
    return ["dashboard", "--repo", str(repo), "--out", str(out)]


# each command, a subfolder it writes into and a file it writes
COMMANDS = {"render": (render, "clusters", "claims.yaml"),
            "dashboard": (dashboard, "data", "index.html")}
Command = tuple[Callable[[Path, Path], list[str]], str, str]


@pytest.fixture(params=sorted(COMMANDS))
def command(request: pytest.FixtureRequest) -> Command:
    return COMMANDS[request.param]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return example_repo(tmp_path / "fleet")


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder outside the output folder, holding one file of someone else's."""
    place = tmp_path / "elsewhere"
    place.mkdir()
    (place / "file").write_text("someone else's\n")
    return place


def written(repo: Path, command: Command, tmp_path: Path) -> Path:
    """An output folder an earlier run of `command` wrote."""
    out = tmp_path / "out"
    assert main(command[0](repo, out)) == 0
    assert (out / command[1]).is_dir() and (out / command[2]).is_file()
    return out


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], link: Path) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and str(link) in err and "Traceback" not in err


def untouched(elsewhere: Path) -> None:
    assert sorted(p.name for p in elsewhere.iterdir()) == ["file"]
    assert (elsewhere / "file").read_text() == "someone else's\n"


def test_a_link_at_the_folder_itself_is_refused(
        repo: Path, command: Command, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    empty = tmp_path / "empty"          # a new, empty folder: what --out may write into
    empty.mkdir()
    out.symlink_to(empty)
    refused(command[0](repo, out), capsys, out)
    assert list(empty.iterdir()) == []


def test_a_linked_subfolder_is_refused_before_anything_is_written(
        repo: Path, command: Command, elsewhere: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = written(repo, command, tmp_path)
    before = (out / MARKER).read_text()
    sub = out / command[1]
    os.rename(sub, tmp_path / "moved-away")
    sub.symlink_to(elsewhere)
    refused(command[0](repo, out), capsys, sub)
    untouched(elsewhere)
    assert (out / MARKER).read_text() == before


def test_a_linked_file_is_refused_and_its_target_kept(
        repo: Path, command: Command, elsewhere: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = written(repo, command, tmp_path)
    file = out / command[2]
    file.unlink()
    file.symlink_to(elsewhere / "file")
    refused(command[0](repo, out), capsys, file)
    untouched(elsewhere)
    assert file.is_symlink()


def test_a_hard_link_to_a_file_elsewhere_is_not_written_through(
        repo: Path, command: Command, elsewhere: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = written(repo, command, tmp_path)
    file = out / command[2]
    file.unlink()
    os.link(elsewhere / "file", file)
    assert main(command[0](repo, out)) == 2
    assert "hard link" in capsys.readouterr().err
    untouched(elsewhere)


def test_a_listed_file_under_a_linked_folder_is_not_removed(
        repo: Path, command: Command, elsewhere: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = written(repo, command, tmp_path)
    with (out / MARKER).open("a") as marker:
        marker.write("gone/file\n")                 # as if an earlier run had written it
    (out / "gone").symlink_to(elsewhere)
    refused(command[0](repo, out), capsys, out / "gone")
    untouched(elsewhere)


def test_a_listed_file_that_is_a_link_is_refused_not_followed(
        repo: Path, command: Command, elsewhere: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = written(repo, command, tmp_path)
    with (out / MARKER).open("a") as marker:
        marker.write("old.txt\n")
    (out / "old.txt").symlink_to(elsewhere / "file")
    refused(command[0](repo, out), capsys, out / "old.txt")
    untouched(elsewhere)
    assert (out / "old.txt").is_symlink()


def test_a_linked_marker_is_refused(
        repo: Path, command: Command, elsewhere: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    (elsewhere / "list").write_text("notes.txt\n")   # read as the marker, it would own notes
    (out / MARKER).symlink_to(elsewhere / "list")
    refused(command[0](repo, out), capsys, out / MARKER)
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (elsewhere / "list").read_text() == "notes.txt\n"


def test_a_link_planted_after_the_check_is_not_followed_by_the_writes(
        repo: Path, command: Command, elsewhere: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The writes walk the folder with O_NOFOLLOW themselves: a link that appears between the
    check and the writes (simulated by skipping the check) is refused, never followed."""
    out = written(repo, command, tmp_path)
    sub = out / command[1]
    os.rename(sub, tmp_path / "moved-away")
    sub.symlink_to(elsewhere)
    monkeypatch.setattr(outdir, "_check_no_links", lambda *args, **kwargs: None)
    refused(command[0](repo, out), capsys, sub)
    untouched(elsewhere)
