"""The failures' part of the memory fold: recurrences, cascades, and what got past them."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from indexer import history
from summarizer.common import text as tx
from summarizer.common.failures import CASCADE, resolves
from summarizer.memory import extract as ex
from summarizer.memory.tables import FailureRow, select_list

# How far back (in entry ids) the edits that explain a fix are looked for: bounded, so the
# cost of resolving a failure does not grow with history.
PREVENTION_WINDOW = 5000
# A cancelled parallel call belongs to the failure before it in the same session when that
# failure came this recently (the calls of one message fail within a second or two).
CASCADE_WINDOW_NS = 120 * 10**9


class FailureFolding:
    """Mixed into MemoryFold: its row cache (`_get`, `_put`, `rows`) holds the failure rows."""

    conn: sqlite3.Connection
    rows: dict[str, dict[str, Any]]
    current_feature: str
    new_failures: int
    _by_cmd: dict[str, set[str]]
    _by_target: dict[str, set[str]]
    _keys_loaded: set[str]
    _last_failure: dict[str, tuple[str, int]]  # session -> (signature, ts_ns)

    def _get(self, table: str, key: str) -> Any:
        raise NotImplementedError

    def _put(self, table: str, row: Any) -> Any:
        raise NotImplementedError

    def _failure(self, o: ex.FailureObs) -> None:
        at = o.at
        if o.cascade:  # never a failure of its own (see summarizer.common.failures)
            if o.cascade == CASCADE:
                self._fold_cascade(o)
            return
        row: FailureRow | None = self._get("mem_failures", o.signature)
        if row is None:
            self.new_failures += 1
            row = FailureRow(
                signature=o.signature, cmd_key=o.cmd_key, description=o.description,
                prevention="", explicit_prevention=0, tool=o.tool, command=o.command,
                error_class=o.error_class, last_error=o.error_line,
                feature_id=o.feature_id or self.current_feature, sources=o.source,
                session_id=at.session_id, agent_id=at.agent_id, count=0, first_ns=at.ts_ns,
                last_ns=at.ts_ns, entry_id=at.entry_id, last_entry_id=at.entry_id,
                target_key=o.target_key,
            )  # fmt: skip
            self._put("mem_failures", row)
        row.count += 1
        row.description, row.last_error = o.description, o.error_line
        if o.target_key and o.target_key != row.target_key:
            row.target_key = o.target_key
            self._by_target.setdefault(row.target_key, set()).add(row.signature)
        row.sources = ",".join(sorted(set(filter(None, row.sources.split(","))) | {o.source}))
        row.last_ns = max(row.last_ns, at.ts_ns)
        row.last_entry_id = at.entry_id
        row.session_id, row.agent_id = at.session_id, at.agent_id
        row.feature_id = row.feature_id or o.feature_id or self.current_feature
        if o.prevention:
            row.prevention, row.explicit_prevention = o.prevention, 1
        if o.resolved:
            row.resolved_ns, row.resolved_entry_id = at.ts_ns, at.entry_id
        self._last_failure[at.session_id] = (row.signature, at.ts_ns)

    def _fold_cascade(self, o: ex.FailureObs) -> None:
        cause = self._last_failure.get(o.at.session_id)
        if cause is None or o.at.ts_ns - cause[1] > CASCADE_WINDOW_NS:
            return
        row: FailureRow | None = self._get("mem_failures", cause[0])
        if row is not None:
            row.cascades += 1

    def _success(self, o: ex.SuccessObs) -> None:
        self._load_candidates(o)
        signatures = set(self._by_cmd.get(o.cmd_key, ()))
        if o.target_key:
            signatures |= {
                sig
                for target, sigs in self._by_target.items()
                if resolves(o.target_key, target)
                for sig in sigs
            }
        for sig in sorted(signatures):
            row: FailureRow = self.rows["mem_failures"][sig]
            if not row.is_open or row.last_entry_id >= o.at.entry_id:
                continue
            row.resolved_ns, row.resolved_entry_id = o.at.ts_ns, o.at.entry_id
            if not row.explicit_prevention:
                row.prevention = self._prevention(row, o)

    def _load_candidates(self, o: ex.SuccessObs) -> None:
        """Read the stored failures this success may resolve (once per key and batch)."""
        queries: list[tuple[str, tuple[str, ...]]] = []
        if o.cmd_key not in self._keys_loaded:
            self._keys_loaded.add(o.cmd_key)
            queries.append(("cmd_key=?", (o.cmd_key,)))
        target = o.target_key
        if target and "target:" + target not in self._keys_loaded:
            self._keys_loaded.add("target:" + target)
            # A test run resolves the failed runs of some of its tests: their keys extend it.
            # (an index range: keys after "<target> " and before "<target>!").
            queries.append(("target_key=? OR (target_key>? AND target_key<?)",
                            (target, target + " ", target + "!")))  # fmt: skip
        for where, args in queries:
            sql = f"SELECT {select_list(self.conn, FailureRow, 'mem_failures')} FROM mem_failures"
            for found in self.conn.execute(f"{sql} WHERE {where}", args):
                if found[0] not in self.rows["mem_failures"]:
                    self._put("mem_failures", FailureRow(*found))

    def _prevention(self, row: FailureRow, o: ex.SuccessObs) -> str:
        """What got past the failure: the edits made since, then what passed."""
        rerun = o.cmd_key == row.cmd_key and row.tool == "Bash"
        if o.cmd_key == row.cmd_key and row.tool == "Bash":
            verb = o.verb
        elif o.command:  # another command line of the same program and subcommand
            verb = f"`{tx.clip(o.command, 80)}` passed"
        else:  # the same kind of call on the same file or agent
            verb = f"a later {row.tool} call on it succeeded"
        low = max(row.last_entry_id, o.at.entry_id - PREVENTION_WINDOW)
        edits: list[tuple[str, str]] = []
        for files, detail, tool, cwd in history.recent_edits(
            self.conn, low, o.at.entry_id, o.at.session_id
        ):
            try:
                tool_input = json.loads(detail).get("input") or {}
                paths = json.loads(files) if files else []
            except (ValueError, AttributeError):
                continue
            if paths and isinstance(tool_input, dict):
                path = tx.relpath(tx.clean(str(paths[0])), str(cwd))
                edits.append((path, tx.edit_snippet(str(tool), tool_input)))
        return tx.prevention_text(edits, verb, rerun)
