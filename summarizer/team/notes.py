"""The team's decisions and constraints for new sessions (`[team] startup`), kept locally."""

from __future__ import annotations

from typing import Any

from indexer import Config, StatePaths
from summarizer.resume.startup import TeamNote, write_team_notes
from summarizer.team.identity import Identity
from summarizer.team.reader import team_items

__all__ = ["NOTES_PER_KIND", "refresh_startup_notes", "team_notes"]

NOTES_PER_KIND = 20  # more than the startup budget can hold: it keeps what fits, best first


def team_notes(conn: Any, who: Identity) -> list[TeamNote]:
    """The constraints in force, then the latest decisions, of the project's other machines."""
    notes = [
        TeamNote("constraint", i.summary, f"{i.user}@{i.machine}")
        for i in team_items(
            conn,
            who.project,
            "constraint",
            NOTES_PER_KIND,
            in_force=True,
            other_than=who.machine_id,
        )
    ]
    notes += [
        TeamNote("decision", i.summary, f"{i.user}@{i.machine}")
        for i in team_items(
            conn, who.project, "decision", NOTES_PER_KIND, other_than=who.machine_id
        )
    ]
    return notes


def refresh_startup_notes(paths: StatePaths, config: Config, conn: Any, who: Identity) -> bool:
    """Fetch the team's notes; when they changed, keep them and rebuild the startup memory."""
    return write_team_notes(paths, config, team_notes(conn, who))
