"""The row an entry is stored as: the INSERT statement and the values it binds."""

from __future__ import annotations

from typing import Any

import msgspec

from indexer.index.keys import tool_key
from indexer.models import Entry

INSERT_ENTRY = (
    "INSERT OR IGNORE INTO entries(file_id, offset, line_no, ts_ns, pid, tool_key, session_id,"
    " hook_event, event, agent_id, agent_type, cc_agent_id, tool_name, tool_use_id, description,"
    " instruction, output_summary, error, files, text, cwd, detail)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_files_encoder = msgspec.json.Encoder()


def entry_row(e: Entry) -> tuple[Any, ...]:
    """The values INSERT_ENTRY binds for `e`, in its column order."""
    return (
        e.file_id,
        e.offset,
        e.line_no,
        e.ts_ns,
        e.pid,
        tool_key(e),
        e.session_id,
        e.hook_event,
        e.event,
        e.agent_id,
        e.agent_type,
        e.cc_agent_id,
        e.tool_name,
        e.tool_use_id,
        e.description,
        e.instruction,
        e.output_summary,
        e.error,
        _files_encoder.encode(e.files).decode() if e.files else "",
        e.text,
        e.cwd,
        e.detail,  # a Raw binds as a BLOB by the buffer protocol, without a copy to bytes
    )
