"""The packer at its edges: joins that cost more or less than their parts, exact cuts, no-op budgets.

Each counter here is written out in the test: one token per character, plus or minus a fixed
amount wherever a chosen pair of characters meets across a line break (as BPE regroups them).
The expected results follow by hand from those counts.
"""

from __future__ import annotations

from summarizer.common.budget import Section, pack_items, pack_sections, render_sections


def chars(text: str) -> int:
    return len(text)


def join_costs(extra: int, pair: str = "a\nb") -> object:
    """len(text), plus `extra` (negative: a saving) for each `pair` in the text."""

    def count(text: str) -> int:
        return max(0, len(text) + extra * text.count(pair))

    return count


def cut(text: str, tokens: int) -> str:
    return text[:tokens]


def test_a_join_that_saves_tokens_is_counted_before_the_item_is_refused() -> None:
    # Parts: 4 + 5 = 9 tokens against a budget of 5, but joined they cost 5.
    count = join_costs(-4)
    assert callable(count)
    assert count("aaaa\nbbbb") == 5
    assert pack_items(["aaaa", "bbbb"], 5, count) == ["aaaa", "bbbb"]


def test_the_first_item_is_cut_to_the_budget_less_the_join_slack() -> None:
    assert pack_items(["x" * 100], 20, chars, truncate=cut) == ["x" * 19]
    assert pack_items(["x" * 100], 20, chars, truncate=cut, separator="XXXX") == ["x" * 19]


def test_a_cut_that_exactly_fills_the_character_room_is_kept() -> None:
    assert pack_items(["x" * 100], 31, chars, truncate=cut, max_chars=30) == ["x" * 30]


def test_a_cut_too_long_in_characters_is_retried_proportionally() -> None:
    # truncate adds a one-character marker: 30 tokens give 31 characters, one too many;
    # the next try asks for 30 * 30 // 31 = 29 tokens, which fits.
    def marked(text: str, tokens: int) -> str:
        return text[:tokens] + "…"

    assert pack_items(["x" * 100], 31, chars, truncate=marked, max_chars=30) == ["x" * 29 + "…"]


def test_a_cut_whose_join_costs_more_is_retried_one_token_shorter() -> None:
    # "aaaa" then a cut of b's: the room is 20 - 4 - 1 (separator) - 1 (slack) = 14 tokens,
    # but the joined text costs 2 more: 4 + 1 + 14 + 2 = 21 > 20; retried with 13: exactly 20.
    count = join_costs(2)
    out = pack_items(["aaaa", "b" * 50], 20, count, truncate=cut)
    assert out == ["aaaa", "b" * 13]
    assert callable(count)
    assert count("\n".join(out)) == 20


def test_a_section_over_its_own_budget_after_joining_drops_its_last_item() -> None:
    # Estimated 4 + 5 + 1 = 10 <= 10, but joined the block costs 11: the section's own budget
    # (not only the total) is checked on the real count.
    count = join_costs(2)
    packed = pack_sections([Section("s", "", ["aaaa", "bbbb"], 10)], 100, count)
    assert packed == {"s": ["aaaa"]}


def test_the_flow_section_gives_up_its_items_first_when_the_render_is_over() -> None:
    # Blocks packed alone: "bS\nzz" (5) and "H\nya" (4) plus a join of 2 fit a total of 11;
    # rendered, "H\nya\nbS\nzz" is 10 characters and "a\nb" costs 2 more (12): the flow
    # section loses its item, not the last section.
    count = join_costs(2)
    sections = [Section("flow", "H", ["ya"], 0), Section("other", "bS", ["zz"], 10)]
    packed = pack_sections(sections, 11, count, flow_to="flow")
    assert packed == {"flow": [], "other": ["zz"]}
    assert render_sections(packed, sections) == "bS\nzz"


def test_no_budget_returns_before_counting_anything() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text)

    sections = [Section("s", "head", ["item"], 10)]
    assert pack_sections(sections, 0, count) == {"s": []}
    assert pack_sections(sections, 100, count, max_chars=0) == {"s": []}
    assert pack_items(["item"], 0, count) == []
    assert pack_items(["item"], 100, count, max_chars=0) == []
    assert calls == []


def test_an_empty_separator_costs_only_the_join_slack() -> None:
    # "aaaa" leaves 9 - 4 = 5 tokens; the next block may use 5 - 1 (slack) = 4: "bbbb" fits.
    sections = [Section("a", "", ["aaaa"], 10), Section("b", "", ["bbbb"], 10)]
    packed = pack_sections(sections, 9, chars, separator="")
    assert packed == {"a": ["aaaa"], "b": ["bbbb"]}


def test_each_later_block_pays_one_separator_in_characters() -> None:
    # Packed in the order b, c, then the flow section a, within 13 characters:
    # "bbbb" (4), "\ncccc" (5) leave 4, and the "\n" before a's block leaves 3:
    # "aaaa" does not fit, "c" does. Rendered: "c\nbbbb\ncccc" (11 characters).
    sections = [
        Section("a", "", ["aaaa", "c"], 100),
        Section("b", "", ["bbbb"], 100),
        Section("c", "", ["cccc"], 100),
    ]
    packed = pack_sections(sections, 1000, chars, max_chars=13, flow_to="a")
    assert packed == {"a": ["c"], "b": ["bbbb"], "c": ["cccc"]}
    assert render_sections(packed, sections) == "c\nbbbb\ncccc"


def test_every_join_keeps_its_slack_in_the_estimate() -> None:
    # Each "a\nb" join costs one token more than its parts: three "ba" cost 2 + 3 + 3 + 2 = 10,
    # a fourth would cost 14 > 13, and "b" after the third costs exactly 13.
    count = join_costs(1)
    out = pack_items(["ba", "ba", "ba", "ba", "b"], 13, count)
    assert out == ["ba", "ba", "ba", "b"]
    assert callable(count)
    assert count("\n".join(out)) == 13
