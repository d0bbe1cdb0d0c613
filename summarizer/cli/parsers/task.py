"""Parser of `ctxd task …`: the task context cache's verbs."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]
_TARGET = "summarizer.cli.commands.task:cmd_task"

_VERBS: list[tuple[str, str]] = [
    ("init", "snapshot a task's immutable context (task, standards, QA plan) and role exports"),
    ("get", "print a task's context (warns when HEAD moved or a cited standard changed)"),
    (
        "update-agent",
        "set one role's status, QA log or session id (starting verifies the previous role)",
    ),
    ("mark-blocked", "add a blocking finding to a role and mark it blocked"),
    (
        "snapshot-worktree",
        "record the working tree when a role finishes (diffs, checksums, status)",
    ),
    ("verify-worktree", "check the working tree against a role's snapshot, file by file"),
    ("get-diff", "print where a role's cumulative or incremental diff is (or the diff itself)"),
    ("record-qa", "store a QA log as a role's baseline result"),
    ("attach-evidence", "link an artifact by path and SHA so prompts can cite its id"),
    ("resolve-drift", "acknowledge drift with a note and reset the drift budget"),
    ("rebuild", "rebuild the immutable block from its recorded sources"),
    ("purge", "delete a task's context and diffs"),
    ("list", "list cached tasks with each role's status"),
]


def register(add: AddCommand) -> None:
    """Add `ctxd task` and its verbs to the `ctxd` parser."""
    task = add("task", _TARGET, "task context cache for implementer/reviewer/validator handoffs")
    verbs = task.add_subparsers(dest="verb", metavar="VERB", parser_class=type(task))
    verbs.required = True
    for name, help_text in _VERBS:
        p = verbs.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--format",
            choices=("text", "json"),
            default="text",
            help="output: text, or JSON {success, data, error} (default text)",
        )
        p.add_argument(
            "--repo",
            metavar="DIR",
            help="git repository (default: the one around the current directory)",
        )
        p.add_argument(
            "--state-dir",
            metavar="DIR",
            default=argparse.SUPPRESS,
            help="state directory (default as for every ctxd command)",
        )
        p.add_argument(
            "--actor", default="", help="who acts, for the audit block (default: the user name)"
        )
        p.add_argument(
            "--force-secrets",
            action="store_true",
            help="store text even if it looks like a secret (recorded in the audit block)",
        )
        if name != "list":
            p.add_argument("task_id", metavar="TASK-ID", help="task id, e.g. TASK-0824")
        extra = _ARGS.get(name)
        if extra is not None:
            extra(p)


def _init(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--task-file", metavar="PATH", help="the task file (.yaml/.yml or .json)")
    source.add_argument(
        "--from-claude-task",
        metavar="ID",
        help="build the task from a Claude Code task ctxd indexed (its TaskCreate subject and "
        "description)",
    )
    p.add_argument(
        "--link-claude-task",
        metavar="ID",
        help="purge this context when Claude Code reports this task completed (with a task file)",
    )
    p.add_argument(
        "--session",
        help="session of the Claude Code task (default: the latest naming it; for"
        " --link-claude-task: any session)",
    )
    p.add_argument("--base-commit", metavar="SHA", help="the task's base commit (default HEAD)")


def _agent(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", required=True, metavar="ROLE", help="role, e.g. implementer")


def _update(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument("--status", choices=("pending", "in_progress", "done", "blocked"))
    p.add_argument("--qa-log", metavar="PATH", help="path of the role's QA output")
    p.add_argument("--session-id", help="the agent's CLI session id")


def _blocked(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument("--finding", required=True, help="the blocker, one line")


def _verify(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--expected-agent", required=True, metavar="ROLE", help="the role that finished last"
    )


def _diff(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument("--type", choices=("from_base", "incremental"), default="from_base")
    p.add_argument("--print", action="store_true", help="print the diff itself (text format)")


def _qa(p: argparse.ArgumentParser) -> None:
    _agent(p)
    p.add_argument("--from", dest="from_path", required=True, metavar="PATH", help="QA log file")


def _evidence(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", required=True, help="kind of artifact, e.g. plan, excerpt, design")
    p.add_argument("--path", required=True, help="the artifact, relative to the repository")


def _resolve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--note", required=True, help="what was done about the drift")


_ARGS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "init": _init,
    "update-agent": _update,
    "mark-blocked": _blocked,
    "snapshot-worktree": _agent,
    "verify-worktree": _verify,
    "get-diff": _diff,
    "record-qa": _qa,
    "attach-evidence": _evidence,
    "resolve-drift": _resolve,
}
