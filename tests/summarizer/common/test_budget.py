"""summarizer.common.budget: greedy packing never exceeds its token and character budgets (I9)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from summarizer.common.budget import Section, pack_items, pack_sections, render_sections, utf16_len
from summarizer.common.tokens import TokenCounter, get_counter, sanitize

MARKER = " …[truncated]"
MAX_CHARS = 10_000
COUNTER: TokenCounter = get_counter()
count = COUNTER.count
truncate = COUNTER.truncate

HUGE = ('Traceback (most recent call last):\n  File "app.py", line 12\n中文😀 ' * 3500)[:200_000]

ITEM = st.one_of(
    st.text(alphabet=st.characters(codec=None), max_size=80),
    st.text(alphabet=st.characters(categories=["Cs", "So", "Lo", "Zs", "Mn"]), max_size=40),
    st.sampled_from(
        [
            "",
            "\n",
            "<|endoftext|>",
            "Decided: use SQLite WAL for the index",
            "Failure: `pytest -x` exit code 1 (3×)",
            "👩‍👩‍👧‍👦🇫🇷 中文 e\u0301",
            "\ud800 lone \udfff",
            "    indented code line();",
            "word " * 300,
        ]
    ),
)
ITEMS = st.lists(ITEM, max_size=60)
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _is_subsequence(kept: Sequence[str], items: Sequence[str]) -> bool:
    it = iter(items)
    return all(any(k == x for x in it) for k in kept)


def _order_preserved(kept: list[str], items: Sequence[str]) -> bool:
    """Kept items are an in-order subsequence; only the last may be a cut (prefix + marker)."""
    if _is_subsequence(kept, items):
        return True
    *whole, last = kept
    if not _is_subsequence(whole, items):
        return False
    body = last.removesuffix(MARKER)
    rest = list(items)
    for w in whole:
        rest = rest[rest.index(w) + 1 :]
    return any(sanitize(x).startswith(body) for x in rest)


def _with_huge(items: list[str], where: int | None) -> list[str]:
    if where is None:
        return items
    return [*items[: where % (len(items) + 1)], HUGE, *items[where % (len(items) + 1) :]]


# ---------------------------------------------------------------- pack_items


@SETTINGS
@given(
    items=ITEMS,
    huge_at=st.none() | st.integers(0, 100),
    max_tokens=st.integers(0, 3000),
    max_chars=st.none() | st.integers(0, MAX_CHARS),
    cut=st.booleans(),
    separator=st.sampled_from(["\n", "\n\n", " ", ""]),
)
def test_pack_items_bounds(
    items: list[str],
    huge_at: int | None,
    max_tokens: int,
    max_chars: int | None,
    cut: bool,
    separator: str,
) -> None:
    items = _with_huge(items, huge_at)
    kept = pack_items(
        items,
        max_tokens,
        count,
        separator=separator,
        max_chars=max_chars,
        truncate=truncate if cut else None,
    )
    text = separator.join(kept)
    assert count(text) <= max(max_tokens, 0)
    assert max_chars is None or len(text) <= max_chars
    assert _order_preserved(kept, items) if cut else _is_subsequence(kept, items)


def test_pack_items_empty_and_zero() -> None:
    assert pack_items([], 100, count) == []
    assert pack_items(["a", "b"], 0, count) == []
    assert pack_items(["a", "b"], 100, count, max_chars=0) == []


def test_pack_items_keeps_rank_order_and_skips_what_does_not_fit() -> None:
    def fake(s: str) -> int:
        return len(s) // 4 + 1

    kept = pack_items(["aaaa" * 10, "b" * 400, "cccc", "dddd"], 20, fake)
    assert kept == ["aaaa" * 10, "cccc", "dddd"]


def test_pack_items_cuts_the_first_item_that_does_not_fit() -> None:
    items = ["short one", HUGE, "never reached"]
    kept = pack_items(items, 300, count, max_chars=MAX_CHARS, truncate=truncate)
    assert kept[0] == "short one"
    assert len(kept) == 2 and kept[1].endswith(MARKER)
    assert 280 <= count("\n".join(kept)) <= 300


def test_pack_items_utf16_char_budget() -> None:
    items = ["😀" * 100] * 200
    kept = pack_items(items, 100_000, count, max_chars=1000, char_len=utf16_len)
    assert utf16_len("\n".join(kept)) <= 1000
    assert len(kept) == 4  # each item is 200 UTF-16 units plus the newline


def test_pack_items_two_thousand_items_does_linear_work() -> None:
    items = [
        f"decision {i}: keep the spool append-only ({i % 13}× seen) 中文😀" for i in range(2000)
    ]
    items.insert(500, HUGE)
    calls: list[int] = []  # characters tokenized per call: the work done (speed is in bench/)

    def counting(text: str) -> int:
        calls.append(len(text))
        return count(text)

    kept = pack_items(items, 2000, counting, max_chars=MAX_CHARS)
    text = "\n".join(kept)
    assert count(text) <= 2000 and len(text) <= MAX_CHARS
    assert count(text) > 1900 or len(text) > MAX_CHARS - 100
    assert HUGE not in kept and _is_subsequence(kept, items)
    # Each item is counted about once, the packed text a few times: not once per item
    # (that would be 2,000 counts of a ~5,000-character text).
    assert len(calls) <= len(items) + 10
    assert sum(calls) <= sum(map(len, items)) + 10 * MAX_CHARS


# ---------------------------------------------------------------- pack_sections

NAMES = ("summary", "decisions", "failures", "constraints")


@st.composite
def section_lists(draw: st.DrawFn) -> list[Section]:
    sections = []
    for name in NAMES:
        items = _with_huge(draw(ITEMS), draw(st.none() | st.integers(0, 100)))
        sections.append(
            Section(
                name=name,
                header=draw(st.sampled_from(["", f"## {name.title()}", "### 決定 😀"])),
                items=items,
                budget_tokens=draw(st.integers(0, 1600)),
                min_items=draw(st.integers(0, 3)),
            )
        )
    return sections


def _block_tokens(packed: dict[str, list[str]], section: Section) -> int:
    return count(render_sections(packed, [section]))


@SETTINGS
@given(
    sections=section_lists(),
    total=st.integers(0, 3000),
    max_chars=st.sampled_from([MAX_CHARS, 2000, 50]),
    flow_to=st.none() | st.sampled_from(NAMES),
    cut=st.booleans(),
)
def test_pack_sections_bounds(
    sections: list[Section], total: int, max_chars: int, flow_to: str | None, cut: bool
) -> None:
    packed = pack_sections(
        sections,
        total,
        count,
        max_chars=max_chars,
        truncate=truncate if cut else None,
        flow_to=flow_to,
    )
    text = render_sections(packed, sections)
    assert count(text) <= max(total, 0)
    assert len(text) <= max_chars
    assert set(packed) == set(NAMES)
    for section in sections:
        kept = packed[section.name]
        assert (
            _order_preserved(kept, section.items) if cut else _is_subsequence(kept, section.items)
        )
    # A section outside min_items stays within its own budget; the flow_to section may also
    # use what the others left unused, and nothing more.
    unused = 0
    for section in sections:
        used = _block_tokens(packed, section)
        if section.name != flow_to:
            unused += max(0, section.budget_tokens - used)
            if len(packed[section.name]) > section.min_items:
                assert used <= section.budget_tokens
    if flow_to is not None:
        flow = next(s for s in sections if s.name == flow_to)
        if len(packed[flow_to]) > flow.min_items:
            assert _block_tokens(packed, flow) <= flow.budget_tokens + unused


def test_unused_budget_flows_to_summary() -> None:
    summary_lines = [f"step {i}: ran the migration and checked the index" for i in range(300)]
    sections = [
        Section("summary", "## Summary", summary_lines, budget_tokens=100),
        Section("decisions", "## Decisions", ["Use WAL mode."], budget_tokens=200),
        Section("failures", "## Failures", [], budget_tokens=150),
    ]
    alone = pack_sections(sections, 2000, count, max_chars=MAX_CHARS)
    flowed = pack_sections(sections, 2000, count, max_chars=MAX_CHARS, flow_to="summary")
    summary = sections[0]
    assert _block_tokens(alone, summary) <= 100
    free = 200 - _block_tokens(flowed, sections[1]) + 150
    assert 100 + free - 15 <= _block_tokens(flowed, summary) <= 100 + free
    assert flowed["decisions"] == ["Use WAL mode."] and flowed["failures"] == []
    assert flowed["summary"][: len(alone["summary"])] == alone["summary"]


def test_min_items_may_exceed_section_budget() -> None:
    constraints = [f"constraint {i}: never write outside the project directory" for i in range(5)]
    sections = [
        Section("summary", "## Summary", ["did things"] * 50, budget_tokens=100),
        Section("constraints", "## Constraints", constraints, budget_tokens=10, min_items=5),
    ]
    packed = pack_sections(sections, 300, count, max_chars=MAX_CHARS, flow_to="summary")
    assert packed["constraints"] == constraints
    assert count(render_sections(packed, sections)) <= 300


def test_empty_input_gives_empty_result() -> None:
    assert pack_sections([], 2000, count) == {}
    sections = [Section("summary", "## Summary", [], 100), Section("failures", "## F", [], 50)]
    packed = pack_sections(sections, 2000, count, flow_to="summary")
    assert packed == {"summary": [], "failures": []}
    assert render_sections(packed, sections) == ""


def test_render_sections_layout() -> None:
    sections = [Section("a", "## A", ["x"], 10), Section("b", "", ["y", "z"], 10)]
    assert render_sections({"a": ["x"], "b": ["y", "z"]}, sections) == "## A\nx\ny\nz"


def test_section_validation() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        pack_sections([Section("a", "", [], 1), Section("a", "", [], 1)], 10, count)
    with pytest.raises(ValueError, match="flow_to"):
        pack_sections([Section("a", "", [], 1)], 10, count, flow_to="b")


# ---------------------------------------------------------------- safety nets


def _hostile_count(s: str) -> int:
    """Super-additive: every join costs more than its parts, so sum-based estimates undershoot."""
    return len(s) // 3 + s.count("\n") ** 2


def _naive_truncate(s: str, n: int) -> str:
    return s[: n * 4]  # overshoots: more tokens than asked for


@SETTINGS
@given(
    items=st.lists(st.text(max_size=30), max_size=80),
    max_tokens=st.integers(0, 400),
    max_chars=st.none() | st.integers(0, 2000),
    cut=st.booleans(),
)
def test_pack_items_bound_holds_for_any_counter(
    items: list[str], max_tokens: int, max_chars: int | None, cut: bool
) -> None:
    kept = pack_items(
        items,
        max_tokens,
        _hostile_count,
        max_chars=max_chars,
        truncate=_naive_truncate if cut else None,
    )
    text = "\n".join(kept)
    assert _hostile_count(text) <= max_tokens
    assert max_chars is None or len(text) <= max_chars


@SETTINGS
@given(
    sizes=st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 300), st.integers(0, 3)),
        min_size=1,
        max_size=4,
    ),
    total=st.integers(0, 1500),
    flow=st.booleans(),
    cut=st.booleans(),
)
def test_pack_sections_bound_holds_for_any_counter(
    sizes: list[tuple[int, int, int]], total: int, flow: bool, cut: bool
) -> None:
    sections = [
        Section(f"s{i}", f"## S{i}", [f"item {i}.{j} text" for j in range(n)], budget, min_items)
        for i, (n, budget, min_items) in enumerate(sizes)
    ]
    packed = pack_sections(
        sections,
        total,
        _hostile_count,
        max_chars=1500,
        truncate=_naive_truncate if cut else None,
        flow_to="s0" if flow else None,
    )
    text = render_sections(packed, sections)
    assert _hostile_count(text) <= total
    assert len(text) <= 1500


def test_cut_retries_when_truncate_overshoots() -> None:
    # _naive_truncate returns more tokens than asked; the packer must shrink and re-check.
    for max_tokens in range(20, 200, 7):
        kept = pack_items(["a" * 30] * 30, max_tokens, _hostile_count, truncate=_naive_truncate)
        assert _hostile_count("\n".join(kept)) <= max_tokens
    kept = pack_items(["b" * 20, "a" * 200], 30, _hostile_count, truncate=_naive_truncate)
    assert kept[0] == "b" * 20 and len(kept) == 2 and 0 < len(kept[1]) < 200
