"""`ctxd task …`: one library call per verb; JSON {success, data, error} or readable text."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from indexer import CtxdError, load_config
from summarizer.common.cliargs import state_paths
from summarizer.tasks import gitops, handoff, service
from summarizer.tasks.env import TaskEnv
from summarizer.tasks.errors import DriftError, GitError, TaskValidationError


def cmd_task(args: argparse.Namespace) -> int:
    """Run one `ctxd task` verb; errors become {success: false} (json) or one stderr line."""
    as_json = args.format == "json"
    try:
        data = _run(args)
    except (CtxdError, OSError) as e:
        if as_json:
            _print_json({"success": False, "data": None, "error": str(e)})
        elif isinstance(e, DriftError) and e.report:
            print("ERROR: " + str(e), file=sys.stderr)
        else:
            print(f"ctxd task {args.verb}: error: {e}", file=sys.stderr)
        return 1
    if as_json:
        _print_json({"success": True, "data": data, "error": None})
    else:
        _print_text(args, data)
    return 0


def _env(args: argparse.Namespace) -> TaskEnv:
    paths = state_paths(args)
    where = Path(args.repo) if args.repo else Path.cwd()
    try:
        repo = gitops.repo_root(where)
    except GitError:
        if args.verb not in ("list", "purge"):  # the only verbs that need no repository
            raise
        repo = where
    config = load_config(paths.config).tasks
    return TaskEnv(
        state_root=paths.root,
        repo=repo,
        config=config,
        actor=args.actor,
        force_secrets=args.force_secrets,
        warn=lambda message: print(f"warning: {message}", file=sys.stderr),
    )


def _run(args: argparse.Namespace) -> Any:
    env = _env(args)
    from summarizer.cli.commands.task_source import sweep_completed

    for purged in sweep_completed(args):
        env.warn(f"purged {purged}: its Claude Code task was completed")
    verb = args.verb
    if verb == "list":
        return service.list_tasks(env)
    task_id = args.task_id
    if verb == "init":
        claude = None
        if args.from_claude_task:
            from summarizer.cli.commands.task_source import claude_task

            claude = claude_task(args, args.from_claude_task)
        ctx = service.init_context(
            env,
            task_id,
            task_file=Path(args.task_file) if args.task_file else None,
            claude_task=claude,
            link=(args.session or "", args.link_claude_task or ""),
            base_commit=args.base_commit,
        )
        return _builtins(ctx)
    if verb == "get":
        return _builtins(service.get_context(env, task_id))
    if verb == "update-agent":
        ctx = service.update_agent(
            env,
            task_id,
            args.agent,
            status=args.status,
            qa_log=args.qa_log,
            session_id=args.session_id,
        )
        return _builtins(ctx.coordination[args.agent])
    if verb == "mark-blocked":
        return _builtins(
            service.mark_blocked(env, task_id, args.agent, args.finding).coordination[args.agent]
        )
    if verb == "snapshot-worktree":
        return _builtins(handoff.snapshot_worktree(env, task_id, args.agent))
    if verb == "verify-worktree":
        snap = handoff.verify_worktree(env, task_id, args.expected_agent)
        return {
            "verified": True,
            "role": args.expected_agent,
            "diff_sha": snap.diff_sha,
            "files": len(snap.files_changed),
        }
    if verb == "get-diff":
        found = handoff.get_diff(env, task_id, args.agent, args.type)
        if args.print:
            name = Path(found["path"]).name
            found["diff"] = handoff.read_diff(env, task_id, name).decode("utf-8", "replace")
        return found
    if verb == "record-qa":
        ctx = service.record_qa(env, task_id, args.agent, Path(args.from_path))
        return _builtins(ctx.immutable.validation_baseline)
    if verb == "attach-evidence":
        return _builtins(service.attach_evidence(env, task_id, args.type, args.path))
    if verb == "resolve-drift":
        ctx = service.resolve_drift(env, task_id, args.note)
        return {r: c.drift_budget for r, c in ctx.coordination.items()}
    if verb == "rebuild":
        return _builtins(service.rebuild(env, task_id))
    if verb == "purge":
        return {"task_id": task_id, "purged": service.purge(env, task_id)}
    raise TaskValidationError(f"unknown verb {verb}")  # argparse prevents this


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _print_json(doc: dict[str, Any]) -> None:
    print(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))


def _print_text(args: argparse.Namespace, data: Any) -> None:
    verb = args.verb
    if verb == "list":
        if not data:
            print("no cached tasks")
        for row in data:
            statuses = " ".join(f"{r}={s}" for r, s in row["statuses"].items())
            drift = f"  drift={row['drift_budget']}" if row["drift_budget"] else ""
            print(f"{row['task_id']:<16} {statuses}{drift}  {row['title']}")
        return
    if verb == "verify-worktree":
        print(
            f"{args.task_id}: working tree matches the {data['role']} snapshot "
            f"({data['files']} files)"
        )
        return
    if verb == "get-diff" and "diff" in data:
        sys.stdout.write(data["diff"])
        return
    if verb == "init":
        imm = data["immutable"]
        print(f"{data['task_id']}: context created at base {data['git']['head'][:12]}")
        print(f"  task       {imm['task_snapshot']['title']}")
        for c in imm["standards_citations"]:
            print(f"  standard   {c['file']}#{c['section']} {c['line_span']}")
        print(
            f"  scope      {len(imm['repo_paths'])} path(s); QA commands "
            f"{len(imm['validation_baseline']['commands'])}"
        )
        print(f"  roles      {', '.join(data['roles'])} (exports context-<role>.json)")
        return
    if verb == "purge":
        print(f"{args.task_id}: {'purged' if data['purged'] else 'nothing to purge'}")
        return
    print(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))
