"""The packer fills its budget: every item that fits is kept, checked against a plain greedy.

The bound (never over budget) is tested in test_budget.py; these tests check the other side.
With a counter whose counts add up exactly over concatenation (bytes of UTF-8), "fits" has one
meaning, so the expected result is written here independently: walk the items in rank order
and keep each one if the joined text, counted whole, stays within both budgets.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from summarizer.common.budget import Section, pack_items, pack_sections, render_sections, utf16_len
from summarizer.common.tokens import get_counter


def utf8_tokens(text: str) -> int:
    """An additive stand-in for a tokenizer: one token per UTF-8 byte."""
    return len(text.encode("utf-8", "surrogatepass"))


def greedy(
    items: Sequence[str], max_tokens: int, count: object, sep: str, max_chars: int | None
) -> list[str]:
    """Keep, in order, each item with which the joined text still fits both budgets."""
    assert callable(count)
    if max_tokens <= 0 or (max_chars is not None and max_chars <= 0):
        return []
    kept: list[str] = []
    for item in items:
        text = sep.join([*kept, item])
        if count(text) <= max_tokens and (max_chars is None or len(text) <= max_chars):
            kept.append(item)
    return kept


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(st.text(max_size=30), max_size=25),
    max_tokens=st.integers(0, 400),
    max_chars=st.none() | st.integers(0, 400),
    sep=st.sampled_from(["\n", "\n\n", " ", ""]),
)
def test_pack_items_keeps_everything_that_fits(
    items: list[str], max_tokens: int, max_chars: int | None, sep: str
) -> None:
    kept = pack_items(items, max_tokens, utf8_tokens, separator=sep, max_chars=max_chars)
    assert kept == greedy(items, max_tokens, utf8_tokens, sep, max_chars)


@pytest.mark.parametrize("slack", [0, 1, 2])
def test_pack_items_exact_fit_keeps_every_item(slack: int) -> None:
    """Items that fill the budget exactly, or with a little room left, are all kept."""
    items = ["alpha", "beta", "gamma", "delta"]
    total = len("alpha\nbeta\ngamma\ndelta")  # 23 bytes
    assert pack_items(items, total + slack, utf8_tokens) == items
    assert pack_items(items, total - 1, utf8_tokens) == ["alpha", "beta", "gamma"]
    assert pack_items(items, 100, utf8_tokens, max_chars=total + slack) == items


def test_pack_items_with_the_real_tokenizer_matches_greedy() -> None:
    """Newline-joined lines, as the summaries pack them, with cl100k: the same as greedy."""
    count = get_counter().count
    items = [
        f"Decided: keep the spool append-only for component {i} ({'x' * (i % 7)})"
        for i in range(60)
    ]
    for max_tokens in range(1, 700, 7):
        expected = greedy(items, max_tokens, count, "\n", None)
        assert pack_items(items, max_tokens, count) == expected, max_tokens


def test_pack_sections_exact_fit_keeps_every_item() -> None:
    header, items = "## Notes", ["one", "two", "three"]
    block = len("## Notes\none\ntwo\nthree")
    sections = [Section("notes", header, items, budget_tokens=block)]
    assert pack_sections(sections, block, utf8_tokens) == {"notes": items}
    smaller = [Section("notes", header, items, budget_tokens=block - 1)]
    assert pack_sections(smaller, block, utf8_tokens) == {"notes": ["one", "two"]}


def test_pack_sections_unused_budget_fills_the_flow_section_exactly() -> None:
    """The budget one section leaves unused lets the flow section keep one more item."""
    facts = Section("facts", "F", ["a" * 10], budget_tokens=22)  # block "F\naaaaaaaaaa": 12
    summary_items = ["s" * 9, "t" * 9, "u" * 9]
    # Block "S\nsssssssss\nttttttttt": 21 bytes; with the third item: 31 = 21 + (22 - 12).
    summary = Section("summary", "S", summary_items, budget_tokens=21)
    packed = pack_sections([facts, summary], 1000, utf8_tokens, flow_to="summary")
    assert packed == {"facts": ["a" * 10], "summary": summary_items}
    render = render_sections(packed, [facts, summary])
    assert render == "F\n" + "a" * 10 + "\nS\n" + "\n".join(summary_items)
    alone = pack_sections([summary], 1000, utf8_tokens, flow_to="summary")
    assert alone == {"summary": summary_items[:2]}  # no unused budget: 31 > 21


def test_utf16_len_is_an_exact_integer() -> None:
    assert [utf16_len(t) for t in ("", "abc", "é", "😀", "a😀b", "\ud800")] == [0, 3, 1, 2, 4, 1]
    assert all(type(utf16_len(t)) is int for t in ("", "a😀"))


def test_later_sections_get_the_characters_earlier_ones_left() -> None:
    """The second section's room is what the first one's block and the join leave: an item
    too long for it is skipped and a shorter later one kept (not cut away afterwards)."""
    first = Section("a", "A", ["x" * 10], budget_tokens=100)  # "A\nxxxxxxxxxx": 12
    second = Section("b", "B", ["y" * 10, "zz"], budget_tokens=100)
    packed = pack_sections([first, second], 100, utf8_tokens, max_chars=20)
    # room for b: 20 - 12 - 1 = 7 characters: "B\nyyyyyyyyyy" (12) does not fit, "B\nzz" does
    assert packed == {"a": ["x" * 10], "b": ["zz"]}
    assert render_sections(packed, [first, second]) == "A\n" + "x" * 10 + "\nB\nzz"


def test_an_empty_section_leaves_its_whole_budget_to_the_flow_section() -> None:
    """A section with nothing to show uses no tokens, not even its header's."""
    empty = Section("facts", "FACTS-HEADER", [], budget_tokens=20)
    items = ["s" * 9, "t" * 9, "u" * 9]
    summary = Section("summary", "S", items, budget_tokens=11)  # 11 + 20 = 31 = "S\ns…\nt…\nu…"
    packed = pack_sections([empty, summary], 1000, utf8_tokens, flow_to="summary")
    assert packed == {"facts": [], "summary": items}


def cut_bytes(text: str, tokens: int) -> str:
    """truncate() for utf8_tokens on ASCII text: the first `tokens` bytes, no marker."""
    return text[: max(0, tokens)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(st.text(alphabet="abcxyz ", max_size=40), max_size=12),
    max_tokens=st.integers(1, 200),
    max_chars=st.none() | st.integers(1, 200),
    sep=st.sampled_from(["\n", " | "]),
)
def test_pack_items_cuts_the_first_item_that_does_not_fit_into_the_room_left(
    items: list[str], max_tokens: int, max_chars: int | None, sep: str
) -> None:
    """Whole items while they fit; the first that does not is cut into the room left (in
    tokens, all of it but one token of join slack; in characters, all of it) if that is at
    least 8 tokens; then nothing more."""
    kept = pack_items(
        items, max_tokens, utf8_tokens, separator=sep, max_chars=max_chars, truncate=cut_bytes
    )
    limit = max_tokens if max_chars is None else min(max_tokens, max_chars)  # 1 byte = 1 char
    whole: list[str] = []
    for item in items:
        if len(sep.join([*whole, item])) > limit:
            used = len(sep.join(whole)) + (len(sep) if whole else 0)
            want = max_tokens - used - 1
            if max_chars is not None:
                want = min(want, max_chars - used)
            assert kept == ([*whole, item[:want]] if want >= 8 else whole)
            return
        whole.append(item)
    assert kept == whole  # everything fitted


def expected_sections(
    sections: list[Section], total: int, sep: str, max_chars: int | None, flow_to: str | None
) -> dict[str, list[str]]:
    """pack_sections as documented, for an additive counter, written out plainly: sections in
    order (the flow section last, with the budget the others left unused); each keeps, in rank
    order, every item with which its block (header and items) stays within its own budget (the
    first `min_items` within what the total leaves) and within the characters left; a join
    between blocks costs the separator plus one token of slack."""
    out: dict[str, list[str]] = {s.name: [] for s in sections}
    if total <= 0 or (max_chars is not None and max_chars <= 0):
        return out
    tokens_left, chars_left, unused, placed = total, max_chars, 0, 0
    order = [s for s in sections if s.name != flow_to] + [s for s in sections if s.name == flow_to]
    for s in order:
        join_t, join_c = (len(sep) + 1, len(sep)) if placed else (0, 0)
        cap = tokens_left - join_t
        cap_chars = None if chars_left is None else chars_left - join_c
        own = s.budget_tokens + (unused if s.name == flow_to else 0)
        head = [s.header] if s.header else []
        kept: list[str] = []
        if cap > 0 and (cap_chars is None or cap_chars > 0):
            for i, item in enumerate(s.items):
                block = sep.join([*head, *kept, item])
                limit = cap if i < s.min_items else min(own, cap)
                if len(block) <= limit and (cap_chars is None or len(block) <= cap_chars):
                    kept.append(item)
        used = len(sep.join([*head, *kept])) if kept else 0
        if kept:
            placed += 1
            tokens_left -= used + join_t
            if chars_left is not None:
                chars_left -= used + join_c
        if s.name != flow_to:
            unused += max(0, s.budget_tokens - used)
        out[s.name] = kept
    return out


SECTION = st.builds(
    lambda items, budget, min_items, header: (items, budget, min_items, header),
    st.lists(st.text(alphabet="abxyz ", max_size=20), max_size=8),
    st.integers(0, 80),
    st.integers(0, 2),
    st.sampled_from(["", "## H"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(SECTION, min_size=1, max_size=3),
    total=st.integers(0, 200),
    max_chars=st.none() | st.integers(0, 200),
    sep=st.sampled_from(["\n", " | ", ""]),
    flow=st.none() | st.integers(0, 2),
)
def test_pack_sections_keeps_everything_that_fits(
    specs: list[tuple[list[str], int, int, str]],
    total: int,
    max_chars: int | None,
    sep: str,
    flow: int | None,
) -> None:
    sections = [Section(f"s{i}", h, items, b, m) for i, (items, b, m, h) in enumerate(specs)]
    flow_to = f"s{flow}" if flow is not None and flow < len(sections) else None
    packed = pack_sections(
        sections, total, utf8_tokens, separator=sep, max_chars=max_chars, flow_to=flow_to
    )
    assert packed == expected_sections(sections, total, sep, max_chars, flow_to)


def test_a_section_that_uses_its_whole_budget_leaves_nothing_to_flow() -> None:
    facts = Section("facts", "F", ["a" * 10], budget_tokens=12)  # "F\naaaaaaaaaa": all 12
    items = ["s" * 9, "t" * 9, "u" * 9]
    summary = Section("summary", "S", items, budget_tokens=30)  # all three need 31
    packed = pack_sections([facts, summary], 1000, utf8_tokens, flow_to="summary")
    assert packed == {"facts": ["a" * 10], "summary": items[:2]}


def test_pack_sections_cuts_an_item_into_the_section_budget() -> None:
    section = Section("s", "H", ["x" * 50, "never"], budget_tokens=30)
    packed = pack_sections([section], 1000, utf8_tokens, truncate=cut_bytes)
    assert packed == {"s": ["x" * 27]}  # "H\n" + 27 = 29: the room less one token of slack


def test_the_smallest_budgets_still_hold_what_fits() -> None:
    assert pack_items(["a", "b"], 10, utf8_tokens, max_chars=1) == ["a"]
    assert pack_items(["a", "b"], 1, utf8_tokens) == ["a"]
    one = Section("s", "", ["a", "b"], budget_tokens=5)
    assert pack_sections([one], 1, utf8_tokens) == {"s": ["a"]}
    assert pack_sections([one], 10, utf8_tokens, max_chars=1) == {"s": ["a"]}
