"""The hub's counters, exposed as Prometheus text on `GET /metrics`."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Metrics:
    renders: int = 0
    render_seconds_sum: float = 0.0
    last_render_seconds: float = 0.0
    render_errors: int = 0            # errors of the last render
    render_warnings: int = 0
    state_writes: int = 0
    ref_conflicts: int = 0
    step_failures: int = 0
    triggers: dict[str, int] = field(default_factory=dict)
    last_source_commit: str = ""
    last_state_commit: str = ""
    last_render_time: float = 0.0
    last_success_time: float = 0.0
    clusters: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def triggered(self, reason: str) -> None:
        with self._lock:
            self.triggers[reason] = self.triggers.get(reason, 0) + 1

    def rendered(self, *, seconds: float, errors: int, warnings: int, source: str, state: str,
                 wrote: bool, clusters: int, now: float) -> None:
        with self._lock:
            self.renders += 1
            self.render_seconds_sum += seconds
            self.last_render_seconds = seconds
            self.render_errors = errors
            self.render_warnings = warnings
            self.state_writes += int(wrote)
            self.last_source_commit = source
            self.last_state_commit = state
            self.last_render_time = now
            self.clusters = clusters

    def text(self) -> str:
        """The Prometheus exposition format (text 0.0.4)."""
        with self._lock:
            rows: list[tuple[str, str, str, list[tuple[str, float]]]] = [
                ("gitfleet_hub_renders_total", "counter", "Renders run.", [("", self.renders)]),
                ("gitfleet_hub_render_seconds", "summary", "Time spent rendering and writing.",
                 [("_sum", self.render_seconds_sum), ("_count", self.renders)]),
                ("gitfleet_hub_last_render_seconds", "gauge", "Duration of the last render.",
                 [("", self.last_render_seconds)]),
                ("gitfleet_hub_render_errors", "gauge", "Errors of the last render.",
                 [("", self.render_errors)]),
                ("gitfleet_hub_render_warnings", "gauge", "Warnings of the last render.",
                 [("", self.render_warnings)]),
                ("gitfleet_hub_state_writes_total", "counter", "State commits written.",
                 [("", self.state_writes)]),
                ("gitfleet_hub_ref_conflicts_total", "counter", "Ref updates lost to a race.",
                 [("", self.ref_conflicts)]),
                ("gitfleet_hub_step_failures_total", "counter", "Steps that failed (retried).",
                 [("", self.step_failures)]),
                ("gitfleet_hub_clusters", "gauge", "Clusters in the last render.",
                 [("", self.clusters)]),
                ("gitfleet_hub_last_render_timestamp_seconds", "gauge",
                 "When the last render ran.", [("", self.last_render_time)]),
                ("gitfleet_hub_last_success_timestamp_seconds", "gauge",
                 "When a step last succeeded.", [("", self.last_success_time)]),
            ]
            out = []
            for name, kind, help_, samples in rows:
                out += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
                out += [f"{name}{suffix} {_num(value)}" for suffix, value in samples]
            name = "gitfleet_hub_last_source_commit_info"
            out += [f"# HELP {name} The source commit of the last render.",
                    f"# TYPE {name} gauge"]
            if self.last_source_commit:
                out.append(f'{name}{{commit="{self.last_source_commit}",'
                           f'state="{self.last_state_commit}"}} 1')
            name = "gitfleet_hub_triggers_total"
            out += [f"# HELP {name} Wake-ups by trigger.", f"# TYPE {name} counter"]
            out += [f'{name}{{trigger="{k}"}} {v}' for k, v in sorted(self.triggers.items())]
            return "\n".join(out) + "\n"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}"
