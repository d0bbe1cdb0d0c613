"""What runs after every compaction: a list the features that need it append to."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from indexer import Config, StatePaths

AfterCompaction = Callable[[sqlite3.Connection, StatePaths, Config], None]
# Called after every compaction (also those triggered by PreCompact and SessionEnd), with the
# compaction's write connection, under the index lock: keep hooks quick. The resume feature
# appends to it (through the scheduler module, which re-exports this list).
AFTER_COMPACTION: list[AfterCompaction] = []
