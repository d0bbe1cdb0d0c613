"""`ctxd emit KIND …`: an explicit event from the command line."""

from __future__ import annotations

import argparse
import json
from typing import Any

from summarizer.common.cliargs import state_paths
from summarizer.memory.emit import EmitError, emit


def cmd_emit(args: argparse.Namespace) -> int:
    """Handler of `ctxd emit KIND …`."""
    kind = str(args.kind).replace("-", "_")
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
    record = emit(kind, paths=state_paths(args), session_id=args.session, **fields)
    print(json.dumps(record, ensure_ascii=False))
    return 0


def _ms(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise EmitError(f"expected milliseconds since the epoch, got {value!r}") from None
