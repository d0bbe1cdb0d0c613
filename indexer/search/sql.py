"""The search index's SQL: which events are indexed, how a document is built, the schema."""

from __future__ import annotations

# Entry events worth finding, and the kind a search filters them by. Pre-tool events are left
# out: their post-tool event carries the same description and command, plus the output.
ENTRY_KINDS = {
    "prompt": "prompt",
    "tool_result": "tool",
    "tool_failure": "error",
    "agent_failed": "error",
    "agent_start": "agent",
    "agent_complete": "agent",
    "agent_launched": "agent",
    "subagent_stop": "agent",
    "stop": "agent",
    "compact_summary": "summary",
    "post_compact": "summary",
}
MEMORY_KINDS = frozenset({"decision", "constraint", "failure"})
KINDS = ("prompt", "tool", "error", "decision", "constraint", "failure", "summary", "agent")

_EVENTS_SQL = ",".join(f"'{e}'" for e in ENTRY_KINDS)
_KIND_SQL = "CASE new.event " + " ".join(f"WHEN '{e}' THEN '{k}'" for e, k in ENTRY_KINDS.items())
_KIND_SQL += " END"
# Filters are tokens of their own column, so FTS5 intersects them with the words (a filtered
# search stays as fast as a plain one): k<kind>, s<hex of the session id>, a<hex of the agent
# id>. Hex keeps any id one token, and a prefix of an id a prefix of its token.
_TAGS_SQL = f"'k' || {_KIND_SQL} || ' s' || hex(new.session_id) || ' a' || hex(new.agent_id)"
# A command is in the tool input only (a described Bash call shows its description); the
# input may be cut at max_detail_bytes, hence the validity check.
_COMMAND_SQL = (
    "CASE WHEN new.tool_name='Bash' AND json_valid(CAST(new.detail AS TEXT)) THEN"
    " coalesce(json_extract(CAST(new.detail AS TEXT), '$.input.command'), '') ELSE '' END"
)
# The description of a prompt or a stop is the first line of its text: indexing it again
# would double that line's weight.
_BODY_SQL = (
    "trim(CASE WHEN new.event IN ('prompt','stop','subagent_stop','compact_summary')"
    " THEN '' ELSE new.description END"
    " || ' ' || new.instruction || ' ' || new.output_summary || ' ' || new.error"
    " || ' ' || CASE WHEN new.text=new.output_summary THEN '' ELSE new.text END"
    " || ' ' || new.files || ' ' || " + _COMMAND_SQL + ")"
)

SCHEMA = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(
    body, tags, kind UNINDEXED, session_id UNINDEXED, agent_id UNINDEXED, ts_ns UNINDEXED,
    tokenize='unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS search_mem(
    kind TEXT NOT NULL, key TEXT NOT NULL, doc INTEGER NOT NULL, session_id TEXT NOT NULL,
    PRIMARY KEY(kind, key));
CREATE INDEX IF NOT EXISTS search_mem_session ON search_mem(session_id);
INSERT INTO search(search, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
CREATE TRIGGER IF NOT EXISTS search_entry_ad AFTER DELETE ON entries
    WHEN old.event IN ({_EVENTS_SQL}) BEGIN
    DELETE FROM search WHERE rowid=old.id;
END;
CREATE TRIGGER IF NOT EXISTS search_entry_au AFTER UPDATE OF agent_id ON entries
    WHEN new.event IN ({_EVENTS_SQL}) AND new.agent_id != old.agent_id BEGIN
    UPDATE search SET agent_id=new.agent_id, tags={_TAGS_SQL} WHERE rowid=new.id;
END;
CREATE TRIGGER IF NOT EXISTS search_mem_ad AFTER DELETE ON search_mem BEGIN
    DELETE FROM search WHERE rowid=old.doc;
END;
"""
# Every trigger any version made, dropped before a rebuild. Version 2 indexed each entry in an
# insert trigger (search_entry_ai); 3 indexes a batch in one statement (the store calls
# index_entries_after), the same documents for about a quarter of the CPU per row.
TRIGGERS = ("search_entry_ai", "search_entry_ad", "search_entry_au", "search_mem_ad")
BACKFILL_ENTRIES = (
    "INSERT INTO search(rowid, body, tags, kind, session_id, agent_id, ts_ns)"
    f" SELECT new.id, {_BODY_SQL}, {_TAGS_SQL}, {_KIND_SQL}, new.session_id, new.agent_id,"
    " new.ts_ns"
    f" FROM entries AS new WHERE new.event IN ({_EVENTS_SQL})"
)
