"""Fuzzing the worked example: a seeded mutator breaks one file of the fleet at a time (dates,
tags, deep nesting, bad keys, truncation, random bytes, type swaps, typos of field names,
aliases) and the commands a user runs must take it: no traceback, exit 0, 1 or 2, nothing
written outside the output folder, and what does not depend on the broken file renders byte
for byte as before.

The cases are fixed by the seed, so a failure is reproducible by its id; most run in process
through `gitfleet.cli.main`, a handful as real processes.
"""

from __future__ import annotations

import contextlib
import functools
import io
import random
import re
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitfleet.cli import main
from tests.conftest import ROOT

EXAMPLE = ROOT / "gitfleet" / "demo" / "example"
SEED = 20260909
CASES = 240
SUBPROCESS_CASES = 3

# The units of the example and the folders of the state tree each one renders into.
UNIT_FOLDERS = {
    "api": ("/api/api/",),
    "web": ("/web/web/",),
    "metrics": ("/metrics/collector/", "/_cluster/metrics-namespace/"),
}

KEY_LINE = re.compile(r"^(?P<lead>\s*(?:- )?)(?P<key>[A-Za-z_][\w.\-/]*):(?P<rest>.*)$")
VALUE_LINE = re.compile(r"^(?P<head>\s*(?:- )?[A-Za-z_][\w.\-/]*: )(?P<value>\S.*)$")


@functools.cache
def _example() -> tuple[tuple[str, bytes], ...]:
    return tuple((p.relative_to(EXAMPLE).as_posix(), p.read_bytes())
                 for p in sorted(EXAMPLE.rglob("*.yaml")))


def example_files() -> dict[str, bytes]:
    return dict(_example())


def unit_of(path: str) -> str | None:
    """The one unit a file of policies/ or templates/ feeds (the example keeps them apart by
    folder); None for files every unit depends on (clusters, fleet.yaml)."""
    parts = path.split("/")
    if parts[0] in ("policies", "templates") and parts[1] in UNIT_FOLDERS:
        return parts[1]
    return None


# --- mutations: each takes the file's text and returns its broken bytes -------------------


def _pick(rng: random.Random, lines: list[str], pattern: re.Pattern[str]) -> int | None:
    found = [i for i, line in enumerate(lines) if pattern.match(line)]
    return rng.choice(found) if found else None


def _with_value(rng: random.Random, text: str, values: list[str]) -> str:
    lines = text.split("\n")
    i = _pick(rng, lines, VALUE_LINE)
    if i is None:
        return text + f"\nextra: {rng.choice(values)}\n"
    m = VALUE_LINE.match(lines[i])
    assert m is not None
    lines[i] = m["head"] + rng.choice(values)
    return "\n".join(lines)


def date(rng: random.Random, text: str) -> str:
    return _with_value(rng, text, ["2024-01-01", "2024-01-01T10:00:00Z", "2001-12-14 21:59:43.1",
                                   "!!timestamp 2024-01-01"])


def tag(rng: random.Random, text: str) -> str:
    tags = ["!!binary", "!foo", "!!set", "!!python/object/apply:os.system", "!!python/name:os.",
            "!!omap", "!!str", "!!int", "!!float", "!!map", "!!seq", "!", "!<tag:x>"]
    lines = text.split("\n")
    i = _pick(rng, lines, VALUE_LINE)
    if i is None:
        return f"{rng.choice(tags)} {text}"
    m = VALUE_LINE.match(lines[i])
    assert m is not None
    lines[i] = f"{m['head']}{rng.choice(tags)} {m['value']}"
    return "\n".join(lines)


def deep(rng: random.Random, text: str) -> str:
    n = rng.choice([50, 99, 101, 150, 3000, 60_000])
    opener, closer = rng.choice([("[", "]"), ("{a: ", "}")])
    return _with_value(rng, text, [opener * n + closer * n])


def bad_key(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i = _pick(rng, lines, KEY_LINE)
    if i is None:
        return text
    m = KEY_LINE.match(lines[i])
    assert m is not None
    key = rng.choice(["80", "true", "on", "~", "null", "1.5", "? [a]\n" + " " * len(m["lead"]),
                      "2024-01-01", '""', "<<", m["key"] + ": 1\n" + m["lead"] + m["key"]])
    lines[i] = f"{m['lead']}{key}:{m['rest']}"
    return "\n".join(lines)


def truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randrange(len(text) + 1)]


def random_bytes(rng: random.Random, text: str) -> bytes:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data) + 1)
        chunk = rng.choice([bytes([rng.randrange(256)]), b"\xff\xfe", b"\x00", b"\t", b"\r",
                            b"\xe2\x80\xa8", b"\xef\xbb\xbf", b"%", b"&", b"*", b"|", b">",
                            b"{", b"]", b"'", b'"', b"\n---\n", b"\n...\n", b"#", b"@", b"`"])
        data[at:at] = chunk
    return bytes(data)


def type_swap(rng: random.Random, text: str) -> str:
    return _with_value(rng, text, ["[1, 2]", "{a: 1}", "-5", "'text'", "null", "true", "1.5",
                                   "99999999999999999999", ".nan", "''", "[]", "{}", "0x10",
                                   "- a", "|\n  block"])


def typo(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i = _pick(rng, lines, KEY_LINE)
    if i is None:
        return text
    m = KEY_LINE.match(lines[i])
    assert m is not None
    key = m["key"]
    at = rng.randrange(len(key))
    how = rng.choice(["drop", "double", "swap", "case", "letter"])
    if how == "drop" and len(key) > 1:
        key = key[:at] + key[at + 1:]
    elif how == "double":
        key = key[:at] + key[at] + key[at:]
    elif how == "swap" and at + 1 < len(key):
        key = key[:at] + key[at + 1] + key[at] + key[at + 2:]
    elif how == "case":
        key = key[:at] + key[at].swapcase() + key[at + 1:]
    else:
        key = key[:at] + rng.choice("abcdefghijklmnopqrstuvwxyz") + key[at + 1:]
    lines[i] = f"{m['lead']}{key}:{m['rest']}"
    return "\n".join(lines)


def alias(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i = _pick(rng, lines, VALUE_LINE)
    if i is None:
        return text
    m = VALUE_LINE.match(lines[i])
    assert m is not None
    how = rng.choice(["recursive", "dangling", "reuse"])
    if how == "recursive":
        lines[i] = m["head"] + "&loop [*loop]"
    elif how == "dangling":
        lines[i] = m["head"] + "*nowhere"
    else:
        lines[i] = m["head"] + "&v " + m["value"]
        j = _pick(rng, lines[i + 1:], VALUE_LINE)
        if j is not None:
            n = VALUE_LINE.match(lines[i + 1 + j])
            assert n is not None
            lines[i + 1 + j] = n["head"] + "*v"
    return "\n".join(lines)


def indent(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    lines[i] = rng.choice([" ", "   ", "\t"]) + lines[i] if rng.random() < 0.7 else \
        lines[i].lstrip()
    return "\n".join(lines)


MUTATIONS: dict[str, Callable[[random.Random, str], str | bytes]] = {
    f.__name__: f for f in (date, tag, deep, bad_key, truncate, random_bytes, type_swap, typo,
                            alias, indent)
}


@dataclass(frozen=True)
class Case:
    id: str
    path: str
    data: bytes


def make_cases() -> list[Case]:
    rng = random.Random(SEED)
    files = example_files()
    paths = sorted(files)
    names = sorted(MUTATIONS)
    cases = []
    for n in range(CASES):
        name = names[n % len(names)]
        path = rng.choice(paths)
        broken = MUTATIONS[name](rng, files[path].decode())
        data = broken.encode() if isinstance(broken, str) else broken
        cases.append(Case(f"{n:03d}-{name}-{path.replace('/', '_')}", path, data))
    return cases


CASE_LIST = make_cases()


# --- running the commands -----------------------------------------------------------------


def run_in_process(*args: str) -> tuple[int, str]:
    """Exit code and output of `gitfleet ARGS` in this process; a traceback fails the test."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except Exception:  # noqa: BLE001 - exactly what this test exists to catch
        pytest.fail(f"gitfleet {' '.join(args)} raised:\n{traceback.format_exc()}")
    return code, out.getvalue()


def write_fleet(folder: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file()}


def unit_files(rendered: dict[str, bytes], unit: str) -> dict[str, bytes]:
    return {p: d for p, d in rendered.items()
            if any(folder in p for folder in UNIT_FOLDERS[unit])}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    work = tmp_path_factory.mktemp("baseline")
    write_fleet(work / "fleet", example_files())
    code, output = run_in_process("render", str(work / "fleet"), "--out", str(work / "out"))
    assert code == 0, output
    rendered = tree(work / "out")
    for unit in UNIT_FOLDERS:
        assert unit_files(rendered, unit), f"the example renders nothing for {unit}"
    return rendered


@pytest.mark.parametrize("case", CASE_LIST, ids=lambda c: c.id)
def test_mutated_fleet_is_reported_and_spares_the_rest(
        case: Case, baseline: dict[str, bytes], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    files = {**example_files(), case.path: case.data}
    fleet, out = tmp_path / "fleet", tmp_path / "out"
    write_fleet(fleet, files)
    monkeypatch.chdir(tmp_path)  # a stray relative write would land here and be seen

    code, output = run_in_process("render", str(fleet), "--out", str(out))
    assert code in (0, 1, 2), output
    if int(case.id[:3]) % 5 == 0:
        checked, said = run_in_process("validate", str(fleet))
        assert checked in (0, 1, 2), said
        assert (checked == 0) == (code == 0), said + output

    assert tree(fleet) == files, "the fleet folder was changed"
    assert {p.name for p in tmp_path.iterdir()} == {"fleet", "out"}
    rendered = tree(out)
    unit = unit_of(case.path)
    for other in UNIT_FOLDERS:
        if other != unit and unit is not None:
            assert unit_files(rendered, other) == unit_files(baseline, other), (
                f"{other} changed though only {case.path} broke:\n{output}")


@pytest.mark.parametrize("case", CASE_LIST[7:: CASES // SUBPROCESS_CASES + 1][:SUBPROCESS_CASES],
                         ids=lambda c: c.id)
def test_mutated_fleet_as_real_processes(case: Case, tmp_path: Path) -> None:
    files = {**example_files(), case.path: case.data}
    fleet = tmp_path / "fleet"
    write_fleet(fleet, files)
    command = ["validate", str(fleet)] if CASE_LIST.index(case) % 2 else \
        ["render", str(fleet), "--out", str(tmp_path / "o")]
    done = subprocess.run([sys.executable, "-m", "gitfleet", *command], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert tree(fleet) == files
    assert {p.name for p in tmp_path.iterdir()} <= {"fleet", "o"}


def test_the_mutations_break_things() -> None:
    # The fuzzer is only as good as its cases: most must differ from the example, and every
    # mutation kind must be there.
    files = example_files()
    changed = [c for c in CASE_LIST if c.data != files[c.path]]
    assert len(changed) > 0.9 * len(CASE_LIST)
    assert {c.id.split("-")[1] for c in changed} == set(MUTATIONS)
