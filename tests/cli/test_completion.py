"""`gitfleet completion bash`: a script bash sources, completing commands, flags and choices."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import gitfleet_here


def _complete(script: Path, words: list[str]) -> list[str]:
    """What bash offers for the last of `words`, with the generated script loaded."""
    array = " ".join(f"'{w}'" for w in words)
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c",
         f'source "{script}"; COMP_WORDS=({array}); COMP_CWORD={len(words) - 1}; '
         '_shtab_gitfleet; printf "%s\\n" "${COMPREPLY[@]}"'],
        capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes_commands_flags_and_choices(tmp_path: Path) -> None:
    out = gitfleet_here("completion", "bash")       # the script; bash runs it below
    assert out.returncode == 0, out.stderr
    script = tmp_path / "gitfleet.bash"
    script.write_text(out.stdout)
    assert "complete" in out.stdout and "gitfleet" in out.stdout
    assert _complete(script, ["gitfleet", "ge"]) == ["get"]
    assert _complete(script, ["gitfleet", "get", "--no-h"]) == ["--no-headers"]
    assert "subscriptions" in _complete(script, ["gitfleet", "get", ""])
    assert _complete(script, ["gitfleet", "completion", "z"]) == ["zsh"]


def test_zsh_script_is_generated() -> None:
    out = gitfleet_here("completion", "zsh")
    assert out.returncode == 0 and out.stdout.startswith("#compdef gitfleet")
