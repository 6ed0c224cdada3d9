"""The diff as a pull-request comment: a summary table, then one collapsed section per cluster.

Code hosts cap a comment's size (GitHub: 65,536 characters), so sections are added while they
fit under `limit`; what does not fit is named at the end, with the command that shows it.
"""

from __future__ import annotations

from gitfleet.diff.model import ADDED, CHANGED, REMOVED, ClusterChange, FleetDiff
from gitfleet.diff.text import cluster_headline, labels_text, short, summary_line

DEFAULT_LIMIT = 60_000


def _fence(text: str) -> str:
    """A code block whose fence is longer than any run of backticks inside it."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}diff\n{text.rstrip(chr(10))}\n{fence}\n"


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|"))


def _section(c: ClusterChange) -> str:
    lines = [f"<details><summary><b>{_escape(c.name)}</b>: {_escape(cluster_headline(c))}"
             "</summary>", ""]
    if c.change:
        lines.append(f"- labels: `{labels_text(c.labels_before)}` → "
                     f"`{labels_text(c.labels_after)}`")
    for r in c.replicas:
        lines.append(f"- replicas of {_escape(r.ident)} ({_escape(r.unit)}): "
                     f"**{r.before} → {r.after}**")
    for d in c.deferred:
        lines.append(f"- ⏸ deferred: {_escape(d.ident)} (`{d.path}`) — {_escape(d.reason)}")
    for desc in c.descriptions:
        lines.append(f"- Description `{desc.unit}` {desc.change}")
    for o in c.objects:
        lines.append(f"- {o.change} {_escape(o.ident)} (`{o.unit}`)")
    lines.append("")
    body = "".join(f"# {d.unit}: Description\n{d.diff}" for d in c.descriptions
                   if d.change == CHANGED)
    body += "".join(o.diff for o in c.objects if o.diff)
    if body:
        lines.append(_fence(body))
    lines.append("</details>\n\n")
    return "\n".join(lines)


def render_markdown(d: FleetDiff, *, limit: int = DEFAULT_LIMIT) -> str:
    head = [f"### gitfleet diff `{short(d.base)}..{short(d.head)}`", "",
            f"**{len(d.affected)} of {d.clusters_total} clusters affected** · "
            f"{d.objects(ADDED)} objects added, {d.objects(CHANGED)} changed, "
            f"{d.objects(REMOVED)} removed · {d.replicas_moved} replicas moved"
            + (f" · {len(d.deferred)} deferred (ApplyLater)" if d.deferred else "")
            + f" · {len(d.errors_introduced)} errors introduced", ""]
    if d.rollouts:
        head.append("#### Rollout waves")
        head.extend(f"- {_escape(r.line())}" for r in d.rollouts)
        head.append("")
    if d.held:
        head.append("#### ✋ Held: mass deletion")
        head.extend(f"- {_escape(line)}" for line in d.held_lines())
        head.append("")
    if d.errors_introduced:
        head.append("#### ❌ Errors introduced")
        head.extend(f"- `{_escape(p.format())}`" for p in d.errors_introduced)
        head.append("")
    if d.errors_fixed:
        head.append("#### ✅ Errors fixed")
        head.extend(f"- `{_escape(p.format())}`" for p in d.errors_fixed)
        head.append("")
    if d.warnings_introduced:
        head.append("#### ⚠️ Warnings introduced")
        head.extend(f"- {_escape(p.format())}" for p in d.warnings_introduced)
        head.append("")
    if d.shown:
        head.append("| cluster | added | changed | removed | replicas | deferred |")
        head.append("|---|---:|---:|---:|---|---:|")
        budget = limit // 2
        for i, c in enumerate(d.shown):
            moves = ", ".join(f"{r.ident} {r.before}→{r.after}" for r in c.replicas) or ""
            row = (f"| {_escape(c.name)}{' (' + c.change + ')' if c.change else ''} | "
                   f"{c.count(ADDED)} | {c.count(CHANGED)} | {c.count(REMOVED)} | "
                   f"{_escape(moves)} | {len(c.deferred)} |")
            budget -= len(row) + 1
            if budget < 0:
                head.append(f"| … {len(d.shown) - i} more clusters | | | | | |")
                break
            head.append(row)
        head.append("")
    elif not d.changed_files:
        head.append("No fleet file changed.")
        head.append("")
    else:
        head.append("No cluster receives anything different.")
        head.append("")
    text = "\n".join(head) + "\n"
    left_out: list[str] = []
    footer_room = 1200
    for c in d.shown:
        section = _section(c)
        if not left_out and len(text) + len(section) + footer_room <= limit:
            text += section
        else:
            left_out.append(c.name)
    if left_out:
        names = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more"
                                             if len(left_out) > 5 else "")
        note = (f"\n_Details of {len(left_out)} clusters left out to stay under "
                f"{limit} characters: {_escape(names)}. Run "
                f"`gitfleet diff {short(d.base)} {short(d.head)} --cluster NAME` to see one._\n")
        text += note
    text += f"\n<sub>{_escape(summary_line(d))}</sub>\n"
    if d.capabilities:
        text += f"<sub>{_escape(str(d.capabilities.get('summary', '')))}</sub>\n"
    return text
