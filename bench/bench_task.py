"""`ctxd task snapshot-worktree` and `verify-worktree` on a repository with N changed files.

Builds a temporary git repository with N tracked files, changes every one of them (plus a few
untracked), then times, in rotating order so machine noise hits all alike:
  - the baseline: plain `git status --porcelain` + `git diff HEAD` (what any handoff check pays),
  - snapshot-worktree and verify-worktree, in process (the library calls the CLI makes),
  - `ctxd task verify-worktree` as a whole process.
Prints medians and ratios to the baseline measured in the same run; deletes its data after.

    python bench/bench_task.py                  # 2,000 changed files, 5 rounds
    python bench/bench_task.py --files 500 --rounds 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from indexer.config import TasksConfig  # noqa: E402
from summarizer.tasks import handoff, service  # noqa: E402
from summarizer.tasks.env import TaskEnv  # noqa: E402

TASK = "TASK-BENCH"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def build(root: Path, files: int) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "standards").mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "b@example.com")
    git(repo, "config", "user.name", "bench")
    for i in range(files):
        sub = repo / "src" / f"d{i // 100:03d}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i:05d}.py").write_text("".join(f"line_{i}_{n} = {n}\n" for n in range(40)))
    (repo / "standards" / "s.md").write_text("# S\n\n## Rules\n\nTest everything.\n")
    (repo / "task.yaml").write_text(
        "title: bench\ndescription: every file changes\nscope:\n  in: ['src/d000/*.py']\n"
        "standards: ['standards/s.md#rules']\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    for path in sorted((repo / "src").rglob("*.py")):
        text = path.read_text().replace("= 7\n", "= 'seven'\n")
        path.write_text(text + "added = True\n")
    for i in range(10):
        (repo / "src" / f"new{i}.py").write_text("new = 1\n")
    return repo


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ctxd-bench-task-"))
    try:
        t = time.perf_counter()
        repo = build(root, args.files)
        print(
            f"built a repository with {args.files:,} changed files in "
            f"{time.perf_counter() - t:.1f} s",
            flush=True,
        )
        env = TaskEnv(state_root=root / "state", repo=repo, config=TasksConfig(), actor="bench")
        service.init_context(env, TASK, task_file=repo / "task.yaml")
        cli = [
            sys.executable,
            "-m",
            "summarizer.cli.app",
            "task",
            "verify-worktree",
            TASK,
            "--expected-agent",
            "implementer",
            "--state-dir",
            str(root / "state"),
        ]

        def baseline() -> None:
            git(repo, "status", "--porcelain")
            git(repo, "diff", "HEAD")

        def snapshot() -> None:
            handoff.snapshot_worktree(env, TASK, "implementer")

        def verify() -> None:
            handoff.verify_worktree(env, TASK, "implementer")

        def verify_cli() -> None:
            subprocess.run(cli, cwd=repo, check=True, capture_output=True)

        snapshot()  # verify needs one
        runs: dict[str, list[float]] = {
            "git status + git diff": [],
            "snapshot-worktree": [],
            "verify-worktree": [],
            "ctxd task verify-worktree": [],
        }
        steps = list(zip(runs, (baseline, snapshot, verify, verify_cli), strict=True))
        for r in range(args.rounds):
            order = steps[r % len(steps) :] + steps[: r % len(steps)]
            for name, fn in order:
                runs[name].append(timed(fn))
        base = statistics.median(runs["git status + git diff"])
        for name, values in runs.items():
            median = statistics.median(values)
            print(f"{name:<28} median {median * 1000:8.1f} ms   {median / base:5.2f}x baseline")
        size = sum(p.stat().st_size for p in (root / "state" / "tasks" / TASK).iterdir())
        print(f"task directory: {size / 1024:.0f} KiB (diffs gzipped)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
