"""The Codex CLI sessions recorded in tests/data/codex/, laid out in a temp folder."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "codex"


@dataclass(frozen=True)
class CodexSession:
    """A recorded Codex session with its placeholders filled in."""

    codex_home: Path
    project: Path
    payloads: list[dict[str, Any]]  # as the hooks received them, in order

    @property
    def session_id(self) -> str:
        return str(self.payloads[0]["session_id"])

    def rollouts(self) -> list[Path]:
        return sorted(self.codex_home.glob("sessions/**/rollout-*.jsonl"))

    def main_rollout(self) -> Path:
        return next(p for p in self.rollouts() if p.name.endswith(f"{self.session_id}.jsonl"))


def recorded_session(dest: Path, name: str = "session-0.171.0") -> CodexSession:
    """Copy the recording `name` under `dest` (a CODEX_HOME and a project folder); return it.

    The rollouts' times are moved to end a second ago: a test that replays the hook payloads
    now then sees them as near in time as the live session did.
    """
    fixture = DATA / name
    codex_home, project = dest / "codex-home", dest / "project"
    project.mkdir(parents=True)
    (project / "export.py").write_text('def header():\n    return ["id", "amount", "total"]\n')
    sources = sorted((fixture / "codex-home").rglob("*.jsonl"))
    stamps = [m[1] for src in sources for m in _STAMP.finditer(src.read_text())]
    shift = datetime.now(UTC) - timedelta(seconds=1) - _parse(max(stamps))
    for src in sources:
        out = codex_home / src.relative_to(fixture / "codex-home")
        out.parent.mkdir(parents=True, exist_ok=True)
        text = _STAMP.sub(lambda m: f'"timestamp":"{_format(_parse(m[1]) + shift)}"', src.read_text())
        out.write_text(_fill(text, codex_home, project))
    text = _fill((fixture / "hook-payloads.jsonl").read_text(), codex_home, project)
    payloads = [json.loads(line) for line in text.splitlines() if line.strip()]
    return CodexSession(codex_home, project, payloads)


_STAMP = re.compile(r'"timestamp":"([0-9T:.-]+Z)"')


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def _format(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _fill(text: str, codex_home: Path, project: Path) -> str:
    return text.replace("{CODEX_HOME}", str(codex_home)).replace("{PROJECT}", str(project))
