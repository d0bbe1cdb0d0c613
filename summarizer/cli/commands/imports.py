"""`ctxd import`: read Claude Code transcripts already on disk into the index."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from indexer import (
    ImportStats,
    IndexBusyError,
    TranscriptImporter,
    TranscriptPathError,
    all_project_dirs,
    import_files,
    open_writer,
    project_dir,
    subdirectory_dirs,
    transcript_files,
    writer_lock,
)
from summarizer.common.cliargs import state_paths

__all__ = ["cmd_import"]


def cmd_import(args: argparse.Namespace) -> int:
    """Import the selected transcripts; print a one-line summary."""
    paths = state_paths(args)
    codex = getattr(args, "host", "claude") == "codex"
    if codex:
        from summarizer.cli.commands.codex_import import codex_sources

        files = codex_sources(args, paths.root)
    else:
        files = transcript_files(_sources(args, paths.root), paths.root)
    try:
        with writer_lock(paths, wait_s=2.0):
            writer = open_writer(paths)
            try:
                writer.start()
                importer = TranscriptImporter(writer, host="codex" if codex else "")
                worker = args.prepare_worker or ("on" if importer.config.prepare_worker else "auto")
                # The prepare worker converts Claude Code's transcripts only.
                stats = _run(importer, files, "off" if codex else worker)
            finally:
                writer.close()
    except IndexBusyError as e:  # only the lock raises it: the daemon owns the index (I8)
        raise IndexBusyError(f"{e}; run `ctxd stop`, then `ctxd import`, then `ctxd start`") from e
    kind = "Codex rollouts" if codex else "transcript files"
    print(
        f"imported {stats.entries} entries from {stats.lines} lines read in {stats.changed} of "
        f"{stats.files} {kind} ({stats.bytes / 1e6:.1f} MB); "
        f"{stats.duplicates} already indexed, {stats.quarantined} quarantined"
    )
    return 0


def _sources(args: argparse.Namespace, state_root: Path) -> list[Path]:
    if args.paths:
        return [Path(p) for p in args.paths]
    if args.all:
        return all_project_dirs(os.environ)
    folder = project_dir(os.environ, os.getcwd())
    # Sessions started in a subdirectory have a folder of their own.
    folders = [folder] if folder.is_dir() else []
    folders += subdirectory_dirs(os.environ, os.getcwd(), state_root)
    if not folders:
        raise TranscriptPathError(
            f"no transcripts of this project in {folder}; give a PATH, use --all, or set "
            "CLAUDE_CONFIG_DIR if Claude Code keeps its data elsewhere"
        )
    return folders


def _run(importer: TranscriptImporter, files: list[Path], worker: str) -> ImportStats:
    bar = _progress_bar(importer, files)
    try:
        return import_files(importer, files, bar.update if bar is not None else None, worker=worker)
    finally:
        if bar is not None:
            bar.close()


def _progress_bar(importer: TranscriptImporter, files: list[Path]) -> Any:
    """A tqdm bar on a terminal only (imported here: no other command loads it)."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=importer.pending_bytes(files), unit="B", unit_scale=True, desc="importing")
