"""Run the real hook under a child subreaper, to know every process it left behind.

A process the hook starts in a new session (the autostarted daemon) is reparented when the hook
exits, to the nearest subreaper. The wrapper below is one (prctl PR_SET_CHILD_SUBREAPER): once
the hook has exited, the wrapper's children are exactly the hook's orphans, alive, and the
zombies it reaps are those that already ended. "The hook started no process" is then a fact
checked at one instant, not a wait: nothing that was never started can start later.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from helpers import HOOK_CMD

_WRAPPER = r"""
import ctypes, json, os, subprocess, sys
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed")
argv = json.loads(sys.argv[1])
done = subprocess.run(argv, input=sys.stdin.buffer.read(), capture_output=True, timeout=60)
reaped = 0
while True:  # the hook's orphans that already exited are our zombies now
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        break
    reaped += 1
me = str(os.getpid())
alive = []
for entry in os.listdir("/proc"):
    try:
        with open(f"/proc/{entry}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        continue
    if fields[1] == me:  # ppid
        alive.append(int(entry))
print(json.dumps({"code": done.returncode, "stdout": done.stdout.decode("latin-1"),
                  "stderr": done.stderr.decode("latin-1"), "alive": alive, "reaped": reaped}))
"""


@dataclass(frozen=True)
class HookRun:
    """What one hook run did: its exit code and output, and the processes it left behind."""

    returncode: int
    stdout: bytes
    stderr: bytes
    alive: list[int]  # processes the hook started that still run (now detached)
    reaped: int  # processes the hook started that had already exited

    @property
    def started(self) -> int:
        return len(self.alive) + self.reaped


def run_hook_as_subreaper(payload: bytes, env: Mapping[str, str], cwd: Path) -> HookRun:
    """Run `python -I -S plugin/ctxd_hook/run_hook.py` under a subreaper; see the module docstring."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _WRAPPER, json.dumps(list(HOOK_CMD))],
        input=payload,
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        timeout=90,  # a daemon holding the hook's pipes would block here: the test fails
        check=True,
    )
    report = json.loads(done.stdout)
    return HookRun(
        report["code"],
        report["stdout"].encode("latin-1"),
        report["stderr"].encode("latin-1"),
        report["alive"],
        report["reaped"],
    )
