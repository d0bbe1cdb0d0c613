"""The recorded Codex CLI session of tests/data/codex/session-0.171.0, laid out in a temp folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "data" / "codex" / "session-0.171.0"


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


def recorded_session(dest: Path) -> CodexSession:
    """Copy the recording under `dest` (a CODEX_HOME and a project folder) and return it."""
    codex_home, project = dest / "codex-home", dest / "project"
    project.mkdir(parents=True)
    (project / "export.py").write_text('def header():\n    return ["id", "amount", "total"]\n')
    for src in (FIXTURE / "codex-home").rglob("*.jsonl"):
        out = codex_home / src.relative_to(FIXTURE / "codex-home")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_fill(src.read_text(), codex_home, project))
    text = _fill((FIXTURE / "hook-payloads.jsonl").read_text(), codex_home, project)
    payloads = [json.loads(line) for line in text.splitlines() if line.strip()]
    return CodexSession(codex_home, project, payloads)


def _fill(text: str, codex_home: Path, project: Path) -> str:
    return text.replace("{CODEX_HOME}", str(codex_home)).replace("{PROJECT}", str(project))
