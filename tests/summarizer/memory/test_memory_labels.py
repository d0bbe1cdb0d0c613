"""The memory against hand labels of the corpus transcripts: precision and recall thresholds.

The figures are printed (run with -s to see them); `python bench/bench_memory_quality.py`
prints the same table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_labels import (
    KINDS,
    TRANSCRIPTS,
    Item,
    corpus_handbacks,
    corpus_memory,
    handback_table,
    label_is_in_its_line,
    load_labels,
    score,
    table,
)

pytestmark = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=f"no corpus at {TRANSCRIPTS}")

# The goals: constraints the memory keeps are the user's rules (precision 95 %), decisions are
# choices actually stated (90 %), and each kind finds 90 % of what the labels say it should.
MIN_PRECISION = {"constraint": 0.95, "decision": 0.90}
MIN_RECALL = 0.90


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list[Item]:
    return corpus_memory(Path(tmp_path_factory.mktemp("labels")) / "state")


def test_every_label_quotes_the_transcript_line_it_names() -> None:
    labels = load_labels()
    assert labels, "no labels"
    assert all(label.kind in KINDS for label in labels)
    assert [label for label in labels if not label_is_in_its_line(label)] == []


def test_precision_and_recall_reach_the_goals(items: list[Item]) -> None:
    scores = score(items, load_labels())
    print("\n" + table(scores))
    for kind in KINDS:
        s = scores[kind]
        assert s.positives >= 8, f"too few {kind} labels to measure anything"
        assert s.precision >= MIN_PRECISION[kind], table(scores)
        assert s.recall >= MIN_RECALL, table(scores)


def test_corpus_hand_backs_are_small_and_name_every_unresolved_failure(tmp_path: Path) -> None:
    backs = corpus_handbacks(tmp_path)
    print("\n" + handback_table(backs))
    assert len(backs) >= 10
    assert sum(b.tokens for b in backs) / len(backs) <= 800, handback_table(backs)
    assert all(b.open_failures_shown == b.open_failures for b in backs), handback_table(backs)
    assert all("own summary" not in b.text for b in backs)
