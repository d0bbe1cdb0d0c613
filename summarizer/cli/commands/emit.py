"""`ctxd emit KIND …`: an explicit event from the command line."""

from __future__ import annotations

import argparse
import json
from typing import Any

from indexer import StatePaths
from summarizer.common.cliargs import state_paths
from summarizer.memory.emit import EmitError, emit

_EXAMPLES = {
    "decision": 'ctxd emit decision "stream rows with csv" --rationale "files exceed 1 GB"',
    "failure": 'ctxd emit failure "pytest fails on the header row" --command "pytest -q"',
    "constraint": 'ctxd emit constraint "never touch src/billing_legacy.py"',
    "feature_start": "ctxd emit feature-start FEATURE_ID --name NAME",
    "feature_complete": "ctxd emit feature-complete FEATURE_ID",
}


def cmd_emit(args: argparse.Namespace) -> int:
    """Handler of `ctxd emit KIND …`."""
    kind = str(args.kind).replace("-", "_")
    paths = state_paths(args)
    has_text = bool(" ".join(args.text).strip())
    revoking = kind == "constraint" and bool(args.revoke)
    named_feature = kind.startswith("feature") and bool(args.id)
    if not (has_text or revoking or named_feature):
        raise EmitError(f"nothing to record: give the text, e.g. `{_EXAMPLES[kind]}`")
    if kind == "constraint" and args.revoke:
        _check_revocable(paths, args.revoke)
    fields: dict[str, Any] = {"featureId": args.feature_id, "id": args.id}
    if kind == "decision":
        fields.update(decision=" ".join(args.text), rationale=args.rationale)
    elif kind == "failure":
        fields.update(
            description=" ".join(args.text),
            prevention=args.prevention,
            command=args.command,
            error=args.error,
            status="resolved" if args.resolved else None,
        )
    elif kind == "constraint":
        fields.update(description=" ".join(args.text), revoke=args.revoke)
    else:
        fields.update(
            id=" ".join(args.text) or args.id,
            featureId=None,
            name=args.name,
            category=args.category,
            status=args.status,
            startedAt=_ms(args.started_at),
            completedAt=_ms(args.completed_at),
        )
    record = emit(kind, paths=paths, session_id=args.session, **fields)
    print(json.dumps(record, ensure_ascii=False))
    return 0


def _check_revocable(paths: StatePaths, ref: str) -> None:
    """Refuse to revoke a constraint that is not in force (after folding what is new)."""
    from indexer import active_constraint, load_config, open_readonly
    from summarizer.common.text import text_key
    from summarizer.memory.compact import compact_now
    from summarizer.resume.writer import refresh_after_compaction

    if paths.root.is_dir():
        compact_now(
            paths, load_config(paths.config), trigger="manual", after=[refresh_after_compaction]
        )
    conn = open_readonly(paths.index_db)
    found = None
    if conn is not None:
        try:
            found = active_constraint(conn, (ref, text_key(ref)))
        finally:
            conn.close()
    if found is None:
        raise EmitError(
            f"no constraint in force has the id or text {ref!r}; "
            "`ctxd inject --format markdown` lists the active constraints"
        )


def _ms(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise EmitError(f"expected milliseconds since the epoch, got {value!r}") from None
