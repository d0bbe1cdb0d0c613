"""The shape of an after-compaction callback: what a compaction's caller may ask it to run."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from indexer import Config, StatePaths

# Called after a compaction has published, with the compaction's write connection, outside the
# index lock (ingest goes on meanwhile): keep callbacks quick. Whoever builds the compaction
# (the daemon's jobs, the CLI's commands, the public ContextAgent) passes them; the features
# that need them implement them, and this package imports none of those features.
AfterCompaction = Callable[[sqlite3.Connection, StatePaths, Config], None]
