"""Greedy packing of ranked text items under a token budget and a character budget (I9)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Count = Callable[[str], int]
Truncate = Callable[[str, int], str]
CharLen = Callable[[str], int]

# How the token bound is kept: token counts are not additive (BPE pre-tokenization can regroup
# characters around a join), so the packer sums part counts plus _JOIN_SLACK per join not yet
# verified, re-counts the actual joined text whenever that estimate comes within the slack of the
# budget, and always counts the final text before returning, dropping last items until it fits.
# The bound is therefore checked on the real string; the slack only makes the re-counts rare
# (a random search with cl100k found joins costing at most 1 token more than their parts).
_JOIN_SLACK = 1
# The other way round, a join can also cost less than its parts (")" + "\nDecided" regroups
# as ")\n" + "Decided"; a random search found joins up to 2 tokens cheaper): an item whose
# parts seem up to this much over the budget is still counted joined before it is refused.
_JOIN_SAVING = 4

# Cutting an item to fewer tokens than this leaves a useless stub ("Th …[truncated]").
_MIN_TRUNCATED_TOKENS = 8


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, how JavaScript (Claude Code) measures characters."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(frozen=True)
class Section:
    """A titled group of ranked items; the first `min_items` may use the total budget."""

    name: str
    header: str
    items: Sequence[str]
    budget_tokens: int
    min_items: int = 0


class _Packer:
    """Builds `separator.join([head, *items])` item by item within the limits given to add()."""

    def __init__(
        self, count: Count, separator: str, truncate: Truncate | None, char_len: CharLen, head: str
    ) -> None:
        self._count = count
        self._sep = separator
        self._truncate = truncate
        self._len = char_len
        self._parts: list[str] = [head] if head else []
        self.items: list[str] = []
        self.full = False  # set once an item was cut to fit: nothing after it is considered
        self._chars = char_len(head)  # exact: lengths are additive
        self._exact = count(head) if head else 0  # exact tokens of the parts at the last count
        self._pending = 0  # summed tokens of parts added since then
        self._joins = 0  # joins since then, each allowed _JOIN_SLACK extra tokens

    def _text(self) -> str:
        return self._sep.join(self._parts)

    def _refresh(self) -> None:
        if self._joins:
            self._exact = self._count(self._text())
            self._pending = self._joins = 0

    def _push(self, item: str, piece: str) -> None:
        self.items.append(item)
        self._parts.append(item)
        self._chars += self._len(piece)

    def tokens(self) -> int:
        """Exact token count of the packed text (0 while no item is kept: no bare header)."""
        self._refresh()
        return self._exact if self.items else 0

    def chars(self) -> int:
        """Length of the packed text (0 while no item is kept)."""
        return self._chars if self.items else 0

    def add(self, item: str, max_tokens: int, max_chars: int | None) -> bool:
        """Append `item` if the text stays within both limits, else try to cut it; True if kept."""
        if self.full:
            return False
        piece = self._sep + item if self._parts else item
        if max_chars is None or self._chars + self._len(piece) <= max_chars:
            c = self._count(piece)
            if self._exact + self._pending + c + (self._joins + 1) * _JOIN_SLACK <= max_tokens:
                self._pending += c
                self._joins += 1
                self._push(item, piece)
                return True
            self._refresh()
            if self._exact + c + _JOIN_SLACK <= max_tokens:
                self._pending, self._joins = c, 1
                self._push(item, piece)
                return True
            # Near the budget: only the real count can tell. Clearly over: reject without it.
            if self._exact + c <= max_tokens + _JOIN_SAVING:
                total = self._count(self._text() + piece)
                if total <= max_tokens:
                    self._push(item, piece)
                    self._exact = total
                    return True
        if self._truncate is not None:
            self.full = True
            return self._add_cut(item, max_tokens, max_chars)
        return False

    def _add_cut(self, item: str, max_tokens: int, max_chars: int | None) -> bool:
        assert self._truncate is not None
        self._refresh()
        sep = self._sep if self._parts else ""
        room = max_tokens - self._exact - (self._count(sep) if sep else 0) - _JOIN_SLACK
        room_chars = None if max_chars is None else max_chars - self._chars - self._len(sep)
        budget = room
        while budget >= _MIN_TRUNCATED_TOKENS and (room_chars is None or room_chars > 0):
            cut = self._truncate(item, budget)
            if not cut:
                return False
            n = self._len(cut)
            if room_chars is not None and n > room_chars:
                # Fewer tokens, proportionally, until the cut also fits the character room.
                budget = min(budget - 1, budget * room_chars // n)
                continue
            total = self._count(self._text() + sep + cut)
            if total <= max_tokens:
                self._push(cut, sep + cut)
                self._exact, self._pending, self._joins = total, 0, 0
                return True
            budget -= max(1, total - max_tokens)
        return False

    def finish(self, max_tokens: int, soft_tokens: int | None = None, keep: int = 0) -> None:
        """Drop last items until the exact count is <= max_tokens (and <= soft_tokens while
        more than `keep` items remain)."""
        self._refresh()
        while self.items and (
            self._exact > max_tokens
            or (soft_tokens is not None and self._exact > soft_tokens and len(self.items) > keep)
        ):
            self.items.pop()
            self._parts.pop()
            text = self._text()
            self._chars = self._len(text)
            self._exact = self._count(text) if text else 0


def pack_items(
    items: Sequence[str],
    max_tokens: int,
    count: Count,
    *,
    separator: str = "\n",
    max_chars: int | None = None,
    truncate: Truncate | None = None,
    char_len: CharLen = len,
) -> list[str]:
    """Keep items in rank order while `separator.join(kept)` fits both budgets.

    `count(separator.join(result)) <= max_tokens` and `char_len(...) <= max_chars` always hold.
    An item that does not fit in the remaining room is skipped when `truncate` is None;
    otherwise it is cut with `truncate(item, tokens)` into the room (if at least 8 tokens are
    left) and packing stops there, so no lower-ranked item follows a cut or dropped one.
    """
    if max_tokens <= 0 or (max_chars is not None and max_chars <= 0):
        return []
    packer = _Packer(count, separator, truncate, char_len, "")
    for item in items:
        if packer.full:
            break
        packer.add(item, max_tokens, max_chars)
    packer.finish(max_tokens)
    return packer.items


def render_sections(
    packed: dict[str, list[str]], sections: Sequence[Section], separator: str = "\n"
) -> str:
    """Join each non-empty section as header then items, in `sections` order."""
    blocks = []
    for section in sections:
        items = packed.get(section.name) or []
        if items:
            blocks.append(separator.join([section.header, *items] if section.header else items))
    return separator.join(blocks)


def pack_sections(
    sections: Sequence[Section],
    total_tokens: int,
    count: Count,
    *,
    separator: str = "\n",
    max_chars: int | None = None,
    truncate: Truncate | None = None,
    flow_to: str | None = None,
    char_len: CharLen = len,
) -> dict[str, list[str]]:
    """Pack every section within its own budget; the rendered whole fits both total budgets.

    A section's block (header and items) gets `budget_tokens`; the first `min_items` items may
    go beyond that up to what the total leaves. The section named `flow_to` is packed last and
    also gets the budget the others left unused. `render_sections(result, sections, separator)`
    is <= total_tokens (by `count`) and <= max_chars (by `char_len`); an over-long render (BPE
    joins between blocks) loses last items, from the `flow_to` section first.
    """
    names = [s.name for s in sections]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate section names in {names}")
    if flow_to is not None and flow_to not in names:
        raise ValueError(f"flow_to={flow_to!r} names no section (have {names})")
    packed: dict[str, list[str]] = {name: [] for name in names}
    if total_tokens <= 0 or (max_chars is not None and max_chars <= 0):
        return packed
    join_tokens = (count(separator) if separator else 0) + _JOIN_SLACK
    tokens_left, chars_left = total_tokens, max_chars
    unused = 0
    placed = 0
    order = [s for s in sections if s.name != flow_to] + [s for s in sections if s.name == flow_to]
    for section in order:
        join_t = join_tokens if placed else 0
        join_c = char_len(separator) if placed else 0
        cap = tokens_left - join_t
        cap_chars = None if chars_left is None else chars_left - join_c
        own = section.budget_tokens + (unused if section.name == flow_to else 0)
        packer = _Packer(count, separator, truncate, char_len, section.header)
        if cap > 0 and (cap_chars is None or cap_chars > 0):
            for i, item in enumerate(section.items):
                if packer.full:
                    break
                packer.add(item, cap if i < section.min_items else min(own, cap), cap_chars)
            packer.finish(cap, own, section.min_items)
        used = packer.tokens()
        if packer.items:
            placed += 1
            tokens_left -= used + join_t
            if chars_left is not None:
                chars_left -= packer.chars() + join_c
        if section.name != flow_to:
            unused += max(0, section.budget_tokens - used)
        packed[section.name] = packer.items
    _trim_to_fit(
        packed,
        sections,
        total_tokens,
        count,
        separator=separator,
        max_chars=max_chars,
        char_len=char_len,
        flow_to=flow_to,
    )
    return packed


def _trim_to_fit(
    packed: dict[str, list[str]],
    sections: Sequence[Section],
    total_tokens: int,
    count: Count,
    *,
    separator: str,
    max_chars: int | None,
    char_len: CharLen,
    flow_to: str | None,
) -> None:
    # The final check on the real rendered string: what makes the bound hold whatever the
    # per-block estimates said.
    by_name = {s.name: s for s in sections}
    victims = ([flow_to] if flow_to else []) + [s.name for s in reversed(sections)]
    while True:
        text = render_sections(packed, sections, separator)
        if count(text) <= total_tokens and (max_chars is None or char_len(text) <= max_chars):
            return
        # Non-empty here (an empty render fits), so some section has an item to give up.
        candidates = [n for n in victims if len(packed[n]) > by_name[n].min_items] or [
            n for n in victims if packed[n]
        ]
        packed[candidates[0]].pop()
