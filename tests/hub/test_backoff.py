"""A hub whose remote is down backs off with jitter and recovers when the remote comes back."""

from __future__ import annotations

import random
from pathlib import Path

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import RemoteStore
from tests.gitserver import free_port, git_daemon
from tests.hub.fleet import example_repo, git, source_of


def test_backoff_grows_is_capped_and_jittered() -> None:
    settings = HubSettings(backoff_base=0.5, backoff_max=8, jitter=0.25)
    rng = random.Random(1)
    delays = [settings.backoff(n, rng) for n in range(10)]
    for n, delay in enumerate(delays):
        base = min(8, 0.5 * 2 ** n)
        assert base * 0.75 <= delay <= base * 1.25
    assert len({round(d, 6) for d in delays[5:]}) > 1     # jittered, not one fixed value


def test_unreachable_remote_backs_off_then_recovers(tmp_path: Path) -> None:
    work = example_repo(tmp_path / "work")
    served = tmp_path / "served"
    served.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(work), str(served / "fleet.git"))
    settings = HubSettings(interval=15, backoff_base=1, backoff_max=8, jitter=0.1)
    down = Hub(RemoteStore.open(f"git://127.0.0.1:{free_port()}/fleet.git",
                                cache_dir=tmp_path / "cache"),
               settings=settings, clock=FakeClock(), rng=random.Random(3))
    delays = [down.step() for _ in range(5)]
    assert delays[0] < delays[1] < delays[2] < delays[3]
    assert all(d <= 8 * 1.1 for d in delays)
    assert down.metrics.step_failures == 5 and down.consecutive_failures == 5
    with git_daemon(served) as prefix:
        hub = Hub(RemoteStore.open(f"{prefix}/fleet.git", cache_dir=tmp_path / "cache"),
                  settings=settings, clock=FakeClock())
        assert hub.step() == 15
        assert hub.consecutive_failures == 0
    assert source_of(served / "fleet.git") == git(work, "rev-parse", "HEAD").strip()
