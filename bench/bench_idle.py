"""The real daemon at rest and under load: CPU and RSS from /proc while idle, ingesting, compacting.

Indexes N corpus-shaped events in this process (as if a daemon had run before), starts the real
daemon (`ctxd run`) on that project, waits until it has settled (startup compaction published,
no pass for a while), then samples /proc/<pid>/stat and /proc/<pid>/status:
  1. idle for --idle-s seconds (goal < 0.5% of a core, RSS <= 60 MB);
  2. while it ingests M more events dropped into the spool at once (goal: peak RSS <= 100 MB);
  3. during the compaction that follows, until the context files cover every entry.
CPU and RSS are those of the daemon and its child processes together (the prepare worker it
starts for the backlog of phase 2 with `--worker on`; the default, `--worker default`, leaves
the config as `ctxd init` writes it, where the worker is off).

`--at-rest` compares daemons at rest only: for each `--ctxd` (an installed `ctxd`, e.g. one in
a venv holding the code before a change; default: this checkout), in alternating order over
`--rounds` rounds, a fresh project of N events indexed by that ctxd itself, its daemon started
and left to settle (its startup work over, `--settle-s` after its start at least), then its
CPU share over `--idle-s` seconds (from /proc/<pid>/task/*/schedstat, in ns: utime and stime
come in 10 ms ticks, too coarse at rest), and its wake-ups: the calls of every thread that
return from a wait (futex, poll, select, epoll_wait, clock_nanosleep...), counted by
`strace -c -f -p PID` over `--strace-s` seconds (goal: < 0.1% of a core, <= 1 wake-up/s).

    python bench/bench_idle.py                 # 200,000 indexed, then 1,000,000 ingested, 60 s idle
    python bench/bench_idle.py --quick         # 20,000, then 50,000, 45 s idle
    python bench/bench_idle.py --at-rest --ctxd /tmp/base/bin/ctxd --ctxd .venv/bin/ctxd
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ingest import build_spool  # noqa: E402

from indexer.config import Config, IngestConfig  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.writer.catch_up import catch_up  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.25
# A daemon at rest uses well under this share of a core (the idle goal is 0.5 %).
QUIET_CPU = 0.02


@dataclass
class Phase:
    """CPU and RSS samples of the daemon over one phase."""

    name: str
    wall_s: float = 0.0
    cpu_s: float = 0.0
    rss_mb: list[float] = field(default_factory=list)
    load: str = ""  # the machine's load average at the end of the phase
    children: int = 0  # the most child processes (prepare workers) seen at once

    def line(self) -> str:
        share = 100 * self.cpu_s / self.wall_s if self.wall_s else 0.0
        last = self.rss_mb[-1] if self.rss_mb else 0.0
        peak = max(self.rss_mb, default=0.0)
        median = statistics.median(self.rss_mb) if self.rss_mb else 0.0
        return (
            f"  {self.name:<28} {self.wall_s:7.1f} s  CPU {share:6.2f}% of a core  "
            f"RSS peak {peak:6.1f} MB, median {median:6.1f}, at end {last:6.1f} MB  "
            f"children up to {self.children}  (load {self.load})"
        )


def tree(pid: int) -> list[int]:
    """`pid` and its live descendants: a worker process the daemon starts counts as the daemon."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue  # it exited meanwhile
    return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` and its descendants (all threads, reaped children too), in s."""
    total = 0
    for member in tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime, stime, and cutime, cstime: children it waited for (a worker that ended).
        total += sum(int(f) for f in fields[11:15])
    return total / TICKS


def cpu_ns(pid: int) -> int:
    """Time on a CPU of every live thread of `pid` and its descendants, in ns (schedstat:
    exact, where utime and stime come in 10 ms ticks, too coarse for an idle daemon)."""
    total = 0
    for member in tree(pid):
        try:
            for task in Path(f"/proc/{member}/task").iterdir():
                total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue  # it exited meanwhile
    return total


def status_mb(pid: int, key: str) -> float:
    """A `kB` line of /proc/<pid>/status (VmRSS, VmHWM) in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass  # it exited meanwhile
    return 0.0


def tree_mb(pid: int, key: str) -> float:
    """`key` of /proc/<pid>/status summed over the daemon and its descendants, in MB."""
    return sum(status_mb(member, key) for member in tree(pid))


def sample(pid: int, name: str, until: Callable[[], bool], min_s: float = 0.0) -> Phase:
    """Sample the daemon until `until()` holds (and at least `min_s` seconds have passed)."""
    phase = Phase(name)
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    while True:
        time.sleep(SAMPLE_S)
        members = tree(pid)
        phase.children = max(phase.children, len(members) - 1)
        phase.rss_mb.append(sum(status_mb(member, "VmRSS") for member in members))
        elapsed = time.monotonic() - t0
        if elapsed >= min_s and until():
            break
    phase.wall_s = time.monotonic() - t0
    phase.cpu_s = cpu_seconds(pid) - c0
    phase.load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return phase


def heartbeat(paths: StatePaths) -> dict[str, float]:
    try:
        return dict(json.loads(paths.daemon_json.read_bytes()))
    except (OSError, ValueError):
        return {}


def index_state(paths: StatePaths) -> tuple[int, int]:
    """(max entry id, published memory watermark) read from the index."""
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        top = conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0]
        row = conn.execute("SELECT value FROM meta WHERE key='mem.published'").fetchone()
        return int(top), int(row[0]) if row and row[0] else 0
    finally:
        conn.close()


def settled(paths: StatePaths, pid: int, quiet_s: float) -> Callable[[], bool]:
    """True once everything is indexed and published, and for the last `quiet_s` seconds no
    pass ran and the daemon used under QUIET_CPU of a core (the startup work, such as handing
    memory back after the startup compaction, is over)."""
    last = {"passes": -2.0, "since": time.monotonic()}
    cpu_seen: deque[tuple[float, float]] = deque()  # (when, CPU seconds) of recent checks

    def check() -> bool:
        now = time.monotonic()
        cpu_seen.append((now, cpu_seconds(pid)))
        while len(cpu_seen) > 1 and cpu_seen[1][0] <= now - quiet_s:
            cpu_seen.popleft()  # keep one check at least quiet_s old
        beat = heartbeat(paths)
        if beat.get("passes", -1.0) != last["passes"]:
            last["passes"], last["since"] = beat.get("passes", -1.0), now
            return False
        (then, cpu_then), cpu_now = cpu_seen[0], cpu_seen[-1][1]
        calm = now - then >= quiet_s and cpu_now - cpu_then <= QUIET_CPU * (now - then)
        top, published = index_state(paths)
        quiet = now - last["since"] >= quiet_s
        return bool(beat.get("lag_lines") == 0 and published >= top and quiet and calm)

    return check


# The calls a thread blocks in until something happens or a timeout: one return, one wake-up.
WAIT_CALLS = frozenset(
    {
        "futex",
        "poll",
        "ppoll",
        "select",
        "pselect6",
        "epoll_wait",
        "epoll_pwait",
        "epoll_pwait2",
        "clock_nanosleep",
        "nanosleep",
        "accept",
        "accept4",
    }
)


def daemon_argv(ctxd: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment that run `ctxd` ("" for this checkout)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not ctxd:
        return [sys.executable, "-m", "summarizer.cli.app"], {**env, "PYTHONPATH": str(REPO)}
    return [ctxd], env  # an installed ctxd: nothing of this checkout may shadow its code


def count_wakeups(pid: int, seconds: float) -> tuple[int, dict[str, int]] | None:
    """Wait-call returns of every thread of `pid` over `seconds` (strace -c -f); None without
    strace."""
    if not shutil.which("strace"):
        return None
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        trace = subprocess.Popen(
            ["strace", "-c", "-f", "-p", str(pid), "-o", out.name],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(seconds)
        trace.send_signal(signal.SIGINT)
        trace.wait(timeout=30)
        calls = {}
        for line in out.read().splitlines():
            fields = line.split()
            # % time, seconds, usecs/call, calls, [errors,] syscall
            if len(fields) >= 5 and fields[-1] in WAIT_CALLS and fields[3].isdigit():
                calls[fields[-1]] = int(fields[3])
    return sum(calls.values()), calls


@dataclass
class Rest:
    """One daemon at rest: CPU share, RSS and wake-ups."""

    ctxd: str
    cpu_pct: float = 0.0
    rss_mb: float = 0.0
    wakeups_per_s: float | None = None
    calls: dict[str, int] = field(default_factory=dict)
    load: str = ""  # the machine's load average after the idle window


def at_rest(ctxd: str, args: argparse.Namespace) -> Rest:
    """A fresh project indexed by `ctxd` itself, its daemon settled, then measured at rest."""
    argv, env = daemon_argv(ctxd)
    rest = Rest(ctxd or "this checkout")
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        build_spool(paths.spool, args.events)
        ingest = [*argv, "ingest", "--state-dir", str(paths.root)]
        subprocess.run(ingest, env=env, check=True, stdout=subprocess.DEVNULL)
        err = (Path(tmp) / "daemon.stderr").open("wb")
        proc = subprocess.Popen(
            [*argv, "run", "--state-dir", str(paths.root)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            started = time.monotonic()
            quiet = settled(paths, proc.pid, quiet_s=3.0)
            sample(proc.pid, "settle", lambda: quiet() and time.monotonic() - started >= args.settle_s)
            c0, t0 = cpu_ns(proc.pid), time.monotonic()
            idle = sample(proc.pid, "idle", lambda: True, min_s=args.idle_s)
            rest.cpu_pct = 100 * (cpu_ns(proc.pid) - c0) / 1e9 / (time.monotonic() - t0)
            rest.rss_mb = statistics.median(idle.rss_mb)
            rest.load = idle.load
            counted = count_wakeups(proc.pid, args.strace_s)
            if counted is not None:
                rest.wakeups_per_s = counted[0] / args.strace_s
                rest.calls = counted[1]
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            err.close()
    return rest


def compare_at_rest(args: argparse.Namespace) -> int:
    """Each ctxd at rest, in alternating order over the rounds; medians and ratios."""
    ctxds = args.ctxd or [""]
    found: dict[str, list[Rest]] = {c: [] for c in ctxds}
    for n in range(args.rounds):
        order = ctxds if n % 2 == 0 else ctxds[::-1]
        for ctxd in order:
            rest = at_rest(ctxd, args)
            found[ctxd].append(rest)
            wakes = "n/a" if rest.wakeups_per_s is None else f"{rest.wakeups_per_s:.2f}/s"
            calls = ", ".join(f"{k} {v}" for k, v in sorted(rest.calls.items()))
            print(
                f"round {n + 1}: {rest.ctxd}: CPU {rest.cpu_pct:.3f}% of a core over "
                f"{args.idle_s:.0f} s, RSS {rest.rss_mb:.1f} MB, wake-ups {wakes} ({calls}), "
                f"load {rest.load}",
                flush=True,
            )
    print(f"at rest, {args.events:,} events indexed, medians of {args.rounds} rounds:")
    first = ctxds[0]
    for ctxd, rests in found.items():
        cpu = statistics.median(r.cpu_pct for r in rests)
        rss = statistics.median(r.rss_mb for r in rests)
        counted = [r.wakeups_per_s for r in rests if r.wakeups_per_s is not None]
        wakes = statistics.median(counted) if counted else None
        line = f"  {rests[0].ctxd}: CPU {cpu:.3f}% of a core, RSS {rss:.1f} MB"
        line += "" if wakes is None else f", {wakes:.2f} wake-ups/s"
        if ctxd != first and found[first]:
            base_cpu = statistics.median(r.cpu_pct for r in found[first])
            line += f"; CPU {cpu / base_cpu:.2f}x the first" if base_cpu else ""
        print(line)
    print("goals: < 0.1% of a core and at most one wake-up a second at rest, RSS as before")
    return 0


def move_segments(src: Path, dst: Path, prefix: str) -> None:
    """Drop generated segments into the live spool under new names (renames are atomic)."""
    for segment in sorted(src.glob("*.jsonl")):
        segment.rename(dst / f"{prefix}{segment.name[8:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="indexed before the start")
    parser.add_argument("--ingest", type=int, default=1_000_000, help="ingested while sampling")
    parser.add_argument("--idle-s", type=float, default=60.0, help="idle sampling period")
    parser.add_argument("--quick", action="store_true", help="20,000 / 50,000 events, 45 s idle")
    parser.add_argument(
        "--ctxd",
        action="append",
        metavar="PATH",
        help="an installed ctxd to run (repeat to compare; default: this checkout)",
    )
    parser.add_argument("--at-rest", action="store_true", help="compare daemons at rest only")
    parser.add_argument("--rounds", type=int, default=3, help="--at-rest: rounds per ctxd")
    parser.add_argument("--strace-s", type=float, default=30.0, help="--at-rest: strace window")
    parser.add_argument(
        "--settle-s",
        type=float,
        default=40.0,
        help="--at-rest: measure no sooner after the start (the tokenizer is released 30 s "
        "after the startup compaction)",
    )
    parser.add_argument(
        "--worker",
        choices=("on", "off", "default"),
        default="default",
        help="[ingest] prepare_worker of the daemon (on: the RSS then sums both processes)",
    )
    args = parser.parse_args()
    if args.quick:
        args.events, args.ingest, args.idle_s = 20_000, 50_000, 45.0
    if args.at_rest:
        return compare_at_rest(args)
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        if args.worker != "default":
            on = "true" if args.worker == "on" else "false"
            paths.config.write_text(f"[ingest]\nprepare_worker = {on}\n")
        t = time.perf_counter()
        build_spool(paths.spool, args.events)
        catch_up(paths, Config(ingest=IngestConfig(prepare_worker=False)))
        print(f"indexed {args.events:,} events in {time.perf_counter() - t:.1f} s", flush=True)
        staging = Path(tmp) / "staging"
        # The same payloads again, as new sessions: later timestamps and other segment names.
        build_spool(staging, args.ingest, start=args.events)
        log = Path(tmp) / "daemon.stderr"
        argv, env = daemon_argv((args.ctxd or [""])[0])
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [*argv, "run", "--state-dir", str(paths.root)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            phases = run_phases(proc.pid, paths, staging, args, argv, env)
            hwm = tree_mb(proc.pid, "VmHWM")
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        index_mb = paths.index_db.stat().st_size / 1e6
    print(f"daemon on {args.events:,} indexed events, then {args.ingest:,} more ingested")
    for phase in phases:
        print(phase.line())
    ingest = phases[2]
    print(f"  ingest rate: {args.ingest / ingest.wall_s:,.0f} events/s (with views)")
    print(f"  daemon peak RSS over the run (VmHWM): {hwm:.1f} MB; index {index_mb:.0f} MB")
    print(
        "goals: idle < 0.5% of a core and RSS <= 60 MB; peak during ingest and compaction <= 100 MB"
    )
    return 0


def run_phases(
    pid: int,
    paths: StatePaths,
    staging: Path,
    args: argparse.Namespace,
    argv: list[str],
    env: dict[str, str],
) -> list[Phase]:
    """Settle, idle, ingest, compaction: the sampled phases in order."""
    phases = [sample(pid, "start and settle", settled(paths, pid, quiet_s=3.0))]
    phases.append(sample(pid, f"idle ({args.idle_s:.0f} s)", lambda: True, min_s=args.idle_s))
    before = int(heartbeat(paths).get("entries", 0))
    target = before + args.ingest
    move_segments(staging, paths.spool, "20260102")

    def ingested() -> bool:
        beat = heartbeat(paths)
        return beat.get("entries", 0) >= target and beat.get("lag_lines") == 0

    phases.append(sample(pid, f"ingest {args.ingest:,} events", ingested))

    def published() -> bool:
        top, done = index_state(paths)
        return done >= top

    # `ctxd compact` asks the daemon (and waits for its answer) while the daemon is sampled.
    client = subprocess.Popen(
        [*argv, "compact", "--state-dir", str(paths.root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    phases.append(sample(pid, "compaction after it", published, min_s=SAMPLE_S))
    client.wait(timeout=600)
    return phases


if __name__ == "__main__":
    sys.exit(main())
