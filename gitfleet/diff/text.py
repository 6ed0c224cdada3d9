"""The diff as plain text for a terminal: a summary line, then cluster by cluster."""

from __future__ import annotations

from gitfleet.diff.model import ADDED, CHANGED, REMOVED, ClusterChange, FleetDiff

_SIGN = {ADDED: "+", CHANGED: "~", REMOVED: "-"}


def short(sha: str) -> str:
    return sha[:10]


def summary_line(d: FleetDiff) -> str:
    """`N clusters affected of M, objects changed, replicas moved` in one line."""
    parts = [f"{len(d.affected)} of {d.clusters_total} clusters affected",
             f"{d.objects(ADDED)} objects added, {d.objects(CHANGED)} changed, "
             f"{d.objects(REMOVED)} removed",
             f"{d.replicas_moved} replicas moved"]
    if d.replicas_net:
        parts.append(f"{d.replicas_net:+d} replicas in total")
    if d.deferred:
        parts.append(f"{len(d.deferred)} override effects deferred (ApplyLater)")
    parts.append(f"{len(d.errors_introduced)} errors introduced")
    if d.held:
        parts.append(f"{len(d.held)} clusters held")
    return ", ".join(parts)


def labels_text(labels: dict[str, str] | None) -> str:
    if labels is None:
        return "-"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def cluster_headline(c: ClusterChange) -> str:
    bits = []
    if c.change == ADDED:
        bits.append("new cluster")
    elif c.change == REMOVED:
        bits.append("cluster removed")
    elif c.change == CHANGED:
        bits.append("cluster changed")
    counts = [f"{c.count(k)} {k}" for k in (ADDED, CHANGED, REMOVED) if c.count(k)]
    bits.extend(counts)
    if c.replicas:
        bits.append(", ".join(f"{r.ident} {r.before}→{r.after}" for r in c.replicas))
    if c.deferred:
        bits.append(f"{len(c.deferred)} deferred")
    if not counts and not c.change and not c.replicas and not c.deferred:
        bits.append("Description changed")
    return "; ".join(bits)


def render_text(d: FleetDiff, *, diffs: bool = True) -> str:
    out = [f"gitfleet diff {short(d.base)}..{short(d.head)}: {summary_line(d)}"]
    if not d.changed_files:
        out.append("no fleet file changed")
    else:
        out.append(f"files changed: {', '.join(d.changed_files)}")
    if d.capabilities:
        out.append(str(d.capabilities.get("summary", "")))
    out.extend(r.line() for r in d.rollouts)
    out.extend(d.held_lines())
    for p in d.errors_introduced:
        out.append(f"error: {p.format()}")
    for p in d.errors_fixed:
        out.append(f"fixed: {p.format()}")
    for p in d.warnings_introduced:
        out.append(f"warning: {p.format()}")
    for c in d.shown:
        out.append("")
        out.append(f"cluster {c.name}: {cluster_headline(c)}")
        if c.change == CHANGED or (c.change and c.labels_before != c.labels_after):
            out.append(f"  labels: {labels_text(c.labels_before)} -> {labels_text(c.labels_after)}")
        for r in c.replicas:
            out.append(f"  replicas: {r.ident} ({r.unit}) {r.before} -> {r.after}")
        for df in c.deferred:
            out.append(f"  deferred: {df.ident} ({df.path}) in {df.unit}: {df.reason}")
        for desc in c.descriptions:
            out.append(f"  {_SIGN[desc.change]} Description {desc.unit}")
            if diffs and desc.change == CHANGED:
                out.extend("    " + line for line in desc.diff.rstrip("\n").split("\n"))
        for o in c.objects:
            out.append(f"  {_SIGN[o.change]} {o.ident} ({o.unit})")
            if diffs and o.diff:
                out.extend("    " + line for line in o.diff.rstrip("\n").split("\n"))
    return "\n".join(out) + "\n"
