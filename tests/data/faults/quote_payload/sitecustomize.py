"""Test fault: a bug in normalization whose exception quotes the event it was given.

Python imports this module at start when its folder is on PYTHONPATH, as the planted-secrets
test sets it for the real `ctxd ingest` and daemon: events of the session "planted-fault" then
raise a KeyError that quotes their prompt, as a careless `raise KeyError(value)` would, so
that the guard around each line (quarantine, log, go on) runs on real secrets.
"""

from typing import Any

import indexer.prepare.line as _lines

_real = _lines.normalize


def _buggy(payload: Any, **kwargs: Any) -> Any:
    if payload.session_id == "planted-fault":
        raise KeyError(f"no rule for the event {payload.prompt}")
    return _real(payload, **kwargs)


_lines.normalize = _buggy
