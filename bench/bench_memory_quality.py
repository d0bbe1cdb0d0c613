"""What the memory keeps from the real corpus transcripts, scored against hand labels.

Imports every transcript of $CTXD_TEST_CORPUS/transcripts (default ../shared/corpus next to
the checkout) into a temporary state directory, compacts it as `ctxd compact` does, and
prints the precision and recall of the constraints and decisions the memory holds against
tests/data/memory/corpus-labels/labels.toml, with every wrong, unlabelled and missed item.
Goals: constraint precision >= 95 %, decision precision >= 90 %, recall >= 90 % for both.
Then the notes each corpus session would get back after /compact (each project imported into a
state directory of its own): their average size, each section's share, and how many of each
session's unresolved failures they name.

python bench/bench_memory_quality.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from memory_labels import (  # noqa: E402
    TRANSCRIPTS,
    corpus_handbacks,
    corpus_memory,
    handback_table,
    load_labels,
    score,
    table,
)


def main() -> int:
    if not TRANSCRIPTS.is_dir():
        print(f"no corpus at {TRANSCRIPTS}: set CTXD_TEST_CORPUS", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        items = corpus_memory(Path(tmp) / "state")
        backs = corpus_handbacks(Path(tmp) / "projects")
    labels = load_labels()
    print(f"{len(labels)} labels, {len(items)} constraints and decisions remembered")
    print(table(score(items, labels)))
    print()
    print(handback_table(backs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
