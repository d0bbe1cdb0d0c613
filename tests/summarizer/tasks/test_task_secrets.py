"""The task cache refuses what the index would store redacted: the same rules, in every form.

The cache keeps text verbatim (a task's description, findings, diffs, QA logs), so a secret is
refused with its kind named rather than redacted; the check is the index's redaction itself,
so a value the index would hide (by its shape, its context, or once decoded) is refused too.
"""

from __future__ import annotations

import json

import pytest
from planted_secrets import PLANTED, base64_wrapped, json_escaped, url_encoded
from task_helpers import TASK_YAML, ctxd, make_repo, task_env

from summarizer.tasks import service
from summarizer.tasks.errors import TaskValidationError
from summarizer.tasks.store import TaskStore

TASK = "TASK-0824"
# Each was stored as typed: a password by its context only, a key written with JSON escapes
# (as a JSON file shown in a description holds it), and one wrapped in base64.
KEY = "sk-ant-api03-" + "Qm4Zt8Lr2Xv6Np0Ks3Hd7Wb1Yc5Jf9Ga2Ue6Io0" + "AA"
MISSED_BEFORE = [
    ("sqlcmd -P", "Reproduce with `sqlcmd -S db -U sa -P Vq3nTr8xLm2KpZ7w -Q 'SELECT 1'`."),
    ("json member", 'The fixture has {"user": "admin", "password": "hunter22hunter"}.'),
    ("json escapes", "The config holds " + json.dumps(KEY).replace("-", "\\u002d") + "."),
    ("base64", "Decode Y3VybCAtdSBhZG1pbjpTM2NyM3RQYXNzd29yZDEyMyBodHRwczovL2ppcmE= first."),
]


@pytest.mark.parametrize(("why", "text"), MISSED_BEFORE, ids=[m[0] for m in MISSED_BEFORE])
def test_task_init_refuses_a_secret_the_index_would_redact(
    tmp_path: pytest.TempPathFactory, why: str, text: str
) -> None:
    repo = make_repo(tmp_path)  # type: ignore[arg-type]
    state = tmp_path / "state"  # type: ignore[operator]
    task_file = repo / "tasks" / "TASK-0824.task.yaml"
    task_file.write_text(TASK_YAML.replace("Settings load on every visit; cache them.", text))
    env, _ = task_env(repo, state)
    with pytest.raises(TaskValidationError, match=r"Potential secret detected \(pattern: "):
        service.init_context(env, TASK, task_file=task_file)
    assert not (state / "tasks" / TASK).exists()
    # The CLI says so in one line and stores nothing; --force-secrets stores it, audited.
    out = ctxd("task", "init", TASK, "--task-file", str(task_file), cwd=repo, state=state)
    errors = [line for line in out.stderr.splitlines() if line.startswith("ctxd task init: ")]
    assert out.returncode == 1 and len(errors) == 1 and "Use --force-secrets" in errors[0]
    forced = ctxd(
        "task",
        "init",
        TASK,
        "--task-file",
        str(task_file),
        "--force-secrets",
        cwd=repo,
        state=state,
    )
    assert forced.returncode == 0, forced.stderr
    ctx = service.get_context(env, TASK)
    assert any(e.action == "force-secrets" for e in ctx.audit.events)


@pytest.mark.parametrize("form", ["plain", "json-escaped", "url-encoded", "base64"])
def test_every_planted_value_is_refused(tmp_path: pytest.TempPathFactory, form: str) -> None:
    store = TaskStore(tmp_path / "tasks")  # type: ignore[operator]
    passed = []
    for p in PLANTED:
        text = p.context.format(s=p.secret)
        shown = {
            "plain": text,
            "json-escaped": json_escaped(text, p.secret),
            "url-encoded": url_encoded(text, p.secret),
            "base64": f"echo {base64_wrapped(text)} | base64 -d",
        }[form]
        try:
            store.check_values({"task.description": shown}, force_secrets=False)
        except TaskValidationError:
            continue
        passed.append(p.kind)
    assert passed == []


def test_redaction_tags_and_ordinary_text_are_accepted(tmp_path: pytest.TempPathFactory) -> None:
    """Text that came from the index already redacted, and plain task text, go through."""
    store = TaskStore(tmp_path / "tasks")  # type: ignore[operator]
    values = {
        "a": "Deploy with DB_PASSWORD=[REDACTED:secret] and token [REDACTED:github-token]",
        "b": "Settings load on every visit; cache them in the store (mkdir -p cache; ssh -p 22)",
    }
    assert store.check_values(values, force_secrets=False) == []
