"""Render a session as one self-contained HTML page; every piece of event text is escaped.

Event text (prompts, commands, errors, file names, agent output) is untrusted: it goes through
`html.escape` and nowhere else, never into the script or a URL.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field

from summarizer.view.assets import CSS, SCRIPT, content_policy
from summarizer.view.timeline import Item, Lane, Timeline

__all__ = ["MemoryView", "PageData", "render_page"]

_SUMMARY_CHARS = 160
_BODY_CHARS = 4000


@dataclass(frozen=True, slots=True)
class MemoryView:
    """The project memory in force, as lines of text."""

    constraints: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    open_failures: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PageData:
    """What the page shows, already read from the index and the state directory."""

    session_id: str
    title: str
    started: str
    last_activity: str
    status: str
    cwd: str
    events: int
    compactions: int
    timeline: Timeline
    shown_entries: int = 0
    todos: list[tuple[str, str]] = field(default_factory=list)  # (status, content)
    memory: MemoryView = field(default_factory=MemoryView)
    handback: str = ""  # the resume context handed back at the last SessionStart
    prepared: str = ""  # the one ready for the next SessionStart
    total_entries: int = 0


def render_page(data: PageData) -> str:
    """The whole page as one string."""
    e = html.escape
    tl = data.timeline
    clipped = ""
    if data.total_entries > data.shown_entries:
        clipped = f" · showing the last {data.shown_entries:,} of {data.total_entries:,} entries"
    meta = (
        f"<b>{e(data.session_id)}</b> · started {e(data.started)} UTC · last activity "
        f"{e(data.last_activity)} · {e(data.status)} · {data.events:,} events, "
        f"{len(tl.lanes) - 1} agents, {len(tl.failures())} failures, "
        f"{data.compactions} compaction{'' if data.compactions == 1 else 's'}{e(clipped)}"
        + (f"<br>{e(data.cwd)}" if data.cwd else "")
    )
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(content_policy())}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>ctxd · {e(data.title or data.session_id)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<header><h1>{e(data.title or '(untitled session)')}</h1>",
        f'<div class="meta">{meta}</div></header>',
        "<main><div>",
        '<div class="tools"><label><input type="checkbox" id="only-failures"> '
        "hide calls that passed</label>"
        f'<span class="meta">{len(tl.lanes)} lanes: the main conversation and each subagent; '
        "time runs down; click a row for details</span></div>",
        '<div class="scroll">',
        _timeline(tl, data.cwd),
        "</div></div><aside>",
        _failures(tl, data.cwd),
        _compactions(tl, data.handback, data.prepared),
        _todos(data.todos),
        _memory(data.memory),
        _lanes(tl.lanes),
        "</aside></main>",
        f"<script>{SCRIPT}</script>",
        f"<!-- written by ctxd view at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} -->",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _short(text: str, limit: int = _SUMMARY_CHARS) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _clock(ts_ns: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ts_ns / 1e9))


def _relative(text: str, cwd: str) -> str:
    """Paths under the session's directory, shown relative to it (easier to read)."""
    return text.replace(cwd.rstrip("/") + "/", "") if len(cwd) > 1 else text


def _timeline(tl: Timeline, cwd: str) -> str:
    e = html.escape
    column = {lane.lane_id: n + 2 for n, lane in enumerate(tl.lanes)}
    row_of = {item.entry_id: n + 2 for n, item in enumerate(tl.items)}
    last_row = len(tl.items) + 2
    cols = "70px " + " ".join("minmax(200px,1fr)" for _ in tl.lanes)
    out = [
        f'<div class="timeline" id="timeline" style="grid-template-columns:{cols}">',
        '<div class="lanehead" style="grid-column:1;grid-row:1">UTC</div>',
    ]
    for lane in tl.lanes:
        col = column[lane.lane_id]
        label = "main conversation" if lane.lane_id == "main" else lane.lane_id
        sub = lane.agent_type + (f" · {lane.status}" if lane.status else "")
        out.append(
            f'<div class="lanehead lane" data-lane="{e(lane.lane_id)}" '
            f'style="grid-column:{col};grid-row:1" title="{e(lane.description)}">{e(label)}'
            f"<small>{e(sub or lane.description)}</small></div>"
        )
        first = _first_row(tl.items, lane.lane_id, row_of) if lane.lane_id != "main" else 2
        if first:
            last = _last_row(tl.items, lane.lane_id, row_of) + 1
            span = f"{first}/{max(last, first + 1)}"
            out.append(f'<div class="life" style="grid-column:{col};grid-row:{span}"></div>')
    for item in tl.items:
        row = row_of[item.entry_id]
        clock = _clock(item.ts_ns)
        out.append(f'<div class="time" style="grid-column:1;grid-row:{row}">{clock}</div>')
        out.append(_item(item, column.get(item.lane, 2), row, cwd))
    out.append(f'<div style="grid-row:{last_row}"></div></div>')
    return "\n".join(out)


def _first_row(items: list[Item], lane: str, rows: dict[int, int]) -> int:
    for i in items:
        if lane in (i.lane, i.launches):
            return rows[i.entry_id]
    return 0


def _last_row(items: list[Item], lane: str, rows: dict[int, int]) -> int:
    for i in reversed(items):
        if lane in (i.lane, i.launches):
            return rows[i.entry_id]
    return 0


def _item(item: Item, col: int, row: int, cwd: str) -> str:
    e = html.escape
    tags = ""
    if item.kind == "call":
        cls = {"ok": "ok", "failed": "bad", "running": "run"}.get(item.status, "")
        failed = " failed" if item.status == "failed" else ""
        tags = f'<span class="tag {cls}">{e(item.tool or "call")}{failed}</span>'
    else:
        tags = f'<span class="tag">{e(item.kind)}</span>'
    headline = _relative(item.command or item.title, cwd)
    if item.launches:
        headline = f"launch {item.launches}: {item.title}"
    body: list[str] = []
    if item.files:
        body.append(f'<div class="files">{"<br>".join(e(f) for f in item.files)}</div>')
    if item.error:
        body.append(f"<pre>{e(item.error[:_BODY_CHARS])}</pre>")
    if item.body and item.body != headline:
        body.append(f"<pre>{e(item.body[:_BODY_CHARS])}</pre>")
    if item.fix is not None:
        body.append(_fix_line(item, cwd))
    return (
        f'<details class="item k-{e(item.kind)} s-{e(item.status or "none")}" '
        f'id="e{item.entry_id}" data-lane="{e(item.lane)}" '
        f'style="grid-column:{col};grid-row:{row}">'
        f"<summary>{tags}{e(_short(headline))}</summary>{''.join(body)}</details>"
    )


def _fix_line(item: Item, cwd: str) -> str:
    e = html.escape
    fix = item.fix
    if fix is None or not fix.entry_id:
        return '<div class="nofix">not fixed later in this session</div>'
    what = "; ".join(fix.changes) if fix.changes else "no file change recorded in between"
    return (
        f'<div class="fix">passed at <a href="#e{fix.entry_id}">#{fix.entry_id}</a> after: '
        f"{e(_short(_relative(what, cwd), 300))}</div>"
    )


def _section(title: str, body: str, empty: str) -> str:
    inner = body or f'<p class="empty">{html.escape(empty)}</p>'
    return f"<section><h2>{html.escape(title)}</h2>{inner}</section>"


def _failures(tl: Timeline, cwd: str) -> str:
    e = html.escape
    rows = []
    for item in tl.failures():
        first = next((ln for ln in item.error.splitlines()[1:] if ln.strip()), item.error)
        if "FAILED" in item.error:
            first = next(ln for ln in item.error.splitlines() if "FAILED" in ln)
        rows.append(
            f'<li class="failure" data-lane="{e(item.lane)}"><a href="#e{item.entry_id}">'
            f"{_clock(item.ts_ns)}</a> <b>{e(item.lane)}</b> · "
            f"{e(_short(item.command or item.title, 90))}"
            f'<br><span class="files">{e(_short(first, 200))}</span><br>{_fix_line(item, cwd)}</li>'
        )
    body = f"<ul>{''.join(rows)}</ul>" if rows else ""
    return _section(f"Failures ({len(rows)})", body, "No tool call failed in this session.")


def _compactions(tl: Timeline, handback: str, prepared: str) -> str:
    e = html.escape
    rows = [
        f'<li><a href="#e{i.entry_id}">{_clock(i.ts_ns)}</a> {e(_short(i.title, 120))}'
        + (f"<pre>{e(i.body[:_BODY_CHARS])}</pre>" if i.body else "")
        + "</li>"
        for i in tl.compactions()
    ]
    body = f"<ul>{''.join(rows)}</ul>" if rows else ""
    if handback:
        body += f"<p>Handed back after it:</p><pre>{e(handback[:_BODY_CHARS])}</pre>"
    if prepared:
        body += f"<p>Ready to hand back next:</p><pre>{e(prepared[:_BODY_CHARS])}</pre>"
    return _section("Compactions", body, "No compaction in this session.")


def _todos(todos: list[tuple[str, str]]) -> str:
    e = html.escape
    marks = {"completed": "☑", "in_progress": "▶"}
    rows = [
        f'<li>{marks.get(s, "☐")} {e(c)} <span class="tag">{e(s)}</span></li>' for s, c in todos
    ]
    body = f"<ul>{''.join(rows)}</ul>" if rows else ""
    return _section("Tasks", body, "No todo list or task in this session.")


def _memory(mem: MemoryView) -> str:
    e = html.escape
    body = ""
    for title, lines in (
        ("Constraints", mem.constraints),
        ("Decisions", mem.decisions),
        ("Open failures", mem.open_failures),
    ):
        if lines:
            body += f"<h3>{title}</h3><ul>{''.join(f'<li>{e(x)}</li>' for x in lines)}</ul>"
    return _section("Memory in force", body, "The project memory is empty.")


def _lanes(lanes: list[Lane]) -> str:
    e = html.escape
    rows = []
    for lane in lanes[1:]:
        rows.append(
            f"<li><b>{e(lane.lane_id)}</b> ({e(lane.agent_type)}, {e(lane.status)})"
            + (f"<br>asked: {e(_short(lane.instruction, 200))}" if lane.instruction else "")
            + (f"<br>outcome: {e(_short(lane.outcome, 300))}" if lane.outcome else "")
            + "</li>"
        )
    body = f"<ul>{''.join(rows)}</ul>" if rows else ""
    return _section("Agents", body, "No subagent in this session.")
