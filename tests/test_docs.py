"""The README, the pages of docs/, config.toml, --help and .ci/run stay true to the code."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import msgspec

from indexer.config import Config, parse_config
from summarizer.cli.app import build_parser

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"
# The command reference (every command, every option) and the task cache's verb table.
CLI_REFERENCE = (DOCS / "cli.md").read_text(encoding="utf-8")
TASKS = (DOCS / "tasks.md").read_text(encoding="utf-8")
CONFIGURATION = (DOCS / "configuration.md").read_text(encoding="utf-8")
README_MAX_LINES = 300


def _pages() -> dict[str, str]:
    """Every user-facing page: the README and docs/*.md, by path from the checkout's root."""
    pages = {"README.md": README}
    for page in sorted(DOCS.glob("*.md")):
        pages[f"docs/{page.name}"] = page.read_text(encoding="utf-8")
    return pages


def _subcommands() -> list[str]:
    parser = build_parser()
    [action] = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sorted(action.choices)


def _config_keys() -> list[str]:
    keys = []
    for section in msgspec.structs.fields(Config):
        section_type = section.type
        keys += [f.name for f in msgspec.structs.fields(section_type)]
    return keys


def test_ci_runs_exactly_the_readme_test_command() -> None:
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    test_command = blocks[1].strip()
    assert "pytest" in test_command
    ci_lines = (REPO / ".ci" / "run").read_text().strip().splitlines()
    assert ci_lines[-1].strip() == test_command
    testing = (DOCS / "testing.md").read_text(encoding="utf-8")
    assert f"```sh\n{test_command}\n```" in testing, "docs/testing.md shows another test command"


def test_readme_starts_with_the_two_commands() -> None:
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert "ctxd demo" in blocks[0]
    assert README.index(blocks[0]) < README.index("## ")


def test_every_cli_command_is_documented() -> None:
    missing = [name for name in _subcommands() if f"ctxd {name}" not in README]
    assert not missing, f"README lacks {missing}"


def test_every_config_key_is_documented_and_defaulted() -> None:
    config_toml = (REPO / "config.toml").read_text(encoding="utf-8")
    for key in _config_keys():
        assert f"`{key}`" in CONFIGURATION, f"docs/configuration.md lacks {key}"
        assert re.search(rf"^{key} = ", config_toml, re.M), f"config.toml lacks {key}"
    assert parse_config(config_toml.encode()) == Config(), "config.toml must show the defaults"


def test_packaged_default_config_is_the_documented_one() -> None:
    packaged = REPO / "indexer" / "default_config.toml"
    assert packaged.read_bytes() == (REPO / "config.toml").read_bytes()


def test_demo_runs_and_shows_each_stage() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", "demo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    for marker in (
        "indexed 51 entries",
        "agent arch-001",
        "ctxd inject",
        "Active Constraints",
        "additionalContext",
        "Task in progress: Write export tests",
        "[REDACTED:",
    ):
        assert marker in out, marker


def _reference_rows(command: str) -> str:
    """The rows of the command reference (and of the task cache's verb table) that document
    `ctxd <command>`."""
    lines = (CLI_REFERENCE + "\n" + TASKS).splitlines()
    rows = [ln for ln in lines if ln.startswith("| `ctxd ")]
    return "\n".join(r for r in rows if re.search(rf"`ctxd {command}\b", r.split(" | ")[0]))


def _nested_options(parser: argparse.ArgumentParser) -> set[str]:
    """The options of a command's own subcommands (`ctxd task init --task-file`)."""
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= {o for a in sub._actions for o in a.option_strings}
                found |= _nested_options(sub)
    return found


def test_every_option_of_every_command_is_in_its_reference_row() -> None:
    parser = build_parser()
    [action] = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    missing = []
    for name, sub in action.choices.items():
        rows = _reference_rows(name)
        assert rows, f"no row for ctxd {name} in docs/cli.md"
        own = {o for a in sub._actions for o in a.option_strings}
        for action in sub._actions:
            names = [o for o in action.option_strings if o not in ("-h", "--help", "--state-dir")]
            # Documented under any of its names (`-o FILE` documents `-o/--output`).
            if names and not any(re.search(rf"(?<![\w-]){o}(?![\w-])", rows) for o in names):
                missing.append(f"ctxd {name} {'/'.join(names)}")
        known = own | _nested_options(sub)
        for row in rows.splitlines():
            # "`ctxd start` / `ctxd stop [--timeout S]`": each command's own part of the cell
            for part in row.split(" | ")[0].split("` / `"):
                if not re.search(rf"ctxd {name}\b", part):
                    continue
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", part):
                    assert option in known, f"docs document ctxd {name} {option}: not an option"
    assert not missing, f"the rows of docs/cli.md lack {missing}"


def test_help_groups_hold_every_command() -> None:
    from summarizer.cli.terminal.help_groups import GROUPS

    grouped = {name for _, names in GROUPS for name in names}
    assert set(_subcommands()) <= grouped, set(_subcommands()) - grouped
    help_text = build_parser().format_help()
    assert "other:" not in help_text
    for title, _ in GROUPS:
        assert f"\n{title}:\n" in help_text


def test_install_instructions_name_no_unpublished_package() -> None:
    # No release is published: every install command installs from a checkout or a repository,
    # never a name from PyPI (`ctxd` there is another project, `ctxd-claude` is not there).
    from ctxd_hook.plugin import install_command

    unpublished = re.compile(
        r"(?:pip|pipx|uv tool|uv pip) install (?:-\S+ )*ctxd(?:-claude)?(?![-\w/.])"
    )
    sources = [REPO / "README.md", *DOCS.glob("*.md"), *(REPO / "indexer").glob("*.py")]
    sources += (REPO / "summarizer").rglob("*.py")
    named = [str(p.relative_to(REPO)) for p in sources if unpublished.search(p.read_text())]
    assert not named, f"install commands naming an unpublished package in {named}"
    # The README's command is the one the plugin gives (and tests/e2e runs), from a checkout.
    assert install_command("/path/to/ctxd") in README
    name = re.search(r'^name = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert name and name.group(1) == "ctxd-claude"
    market = msgspec.json.decode((REPO / ".claude-plugin" / "marketplace.json").read_bytes())
    assert f"plugin install ctxd@{market['name']}" in README


def test_readme_does_not_send_users_to_internal_documents() -> None:
    for path, text in _pages().items():
        for needle in ("shared/corpus", "ARCHITECTURE.md", "seed 0", "§"):
            assert needle not in text, (path, needle)
    for word in ("spool", "quarantine", "watermark"):
        assert re.search(rf"^- \*\*{word}\*\*: ", README, re.M), f"README does not explain {word}"


def _cli_reference_commands() -> list[str]:
    """The commands named in the first cell of the command reference's table (docs/cli.md)."""
    found = []
    for row in CLI_REFERENCE.splitlines():
        if row.startswith("| `ctxd "):
            found += re.findall(r"`ctxd ([a-z][a-z-]*)", row.split(" | ")[0])
    return found


def test_cli_reference_table_and_help_name_the_same_commands() -> None:
    in_table = set(_cli_reference_commands())
    assert in_table == set(_subcommands()), (
        f"in --help only: {set(_subcommands()) - in_table}; "
        f"in the docs/cli.md table only: {in_table - set(_subcommands())}"
    )


def test_help_lists_every_command_exactly_once() -> None:
    help_text = build_parser().format_help()
    listed = re.findall(r"^  ([a-z][a-z-]*)\s{2,}\S", help_text, re.M)
    assert sorted(listed) == _subcommands(), listed


def _toml_keys() -> list[tuple[str, str]]:
    import tomllib

    parsed = tomllib.loads((REPO / "config.toml").read_text(encoding="utf-8"))
    return [(section, key) for section, table in parsed.items() for key in table]


def test_every_config_toml_key_is_defined_in_indexer_config() -> None:
    source = (REPO / "indexer" / "config.py").read_text(encoding="utf-8")
    sections = {f.name: f.type for f in msgspec.structs.fields(Config)}
    for section, key in _toml_keys():
        assert section in sections, f"config.toml section [{section}] is not in Config"
        names = {f.name for f in msgspec.structs.fields(sections[section])}
        assert key in names, f"config.toml [{section}] {key} is not in indexer/config.py"
        assert re.search(rf"^\s+{key}: ", source, re.M), f"indexer/config.py lacks {key}"
    toml_keys = {key for _, key in _toml_keys()}
    assert set(_config_keys()) <= toml_keys, set(_config_keys()) - toml_keys


# Internal references users cannot follow: design seeds, issue numbers, invariant numbers,
# the development folders.
_JARGON = re.compile(r"\bseed \d|\bissue #?\d|\bI(?:[1-9]|1[0-3])\b|shared/|ARCHITECTURE|§")


def _all_help_texts() -> str:
    parser = build_parser()
    texts = [parser.format_help()]
    stack = [parser]
    while stack:
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    texts.append(sub.format_help())
                    stack.append(sub)
    return "\n".join(texts)


def test_user_facing_text_has_no_internal_references() -> None:
    # docs/INVARIANTS.md defines the invariants' numbers, which the code's comments cite; the
    # other pages may name their range, where they point to it.
    pages = {path: text.replace("I1–I13", "") for path, text in _pages().items()}
    pages.pop("docs/INVARIANTS.md")
    for name, text in (
        *pages.items(),
        ("config.toml", (REPO / "config.toml").read_text(encoding="utf-8")),
        ("--help", _all_help_texts()),
    ):
        hits = [m.group(0) for m in _JARGON.finditer(text)]
        assert not hits, f"{name} mentions {hits}"


def test_demo_help_does_not_offer_the_option_it_refuses() -> None:
    [action] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert "--state-dir" not in action.choices["demo"].format_help()


def test_task_table_and_help_name_the_same_verbs() -> None:
    [action] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    task = action.choices["task"]
    [verbs] = [a for a in task._actions if isinstance(a, argparse._SubParsersAction)]
    documented = set(re.findall(r"^\| `ctxd task ([a-z][a-z-]*)", TASKS, re.M))
    assert documented == set(verbs.choices), documented ^ set(verbs.choices)


def test_configuration_reference_lists_each_section_exactly() -> None:
    section = CONFIGURATION.split("The keys:", 1)[1]
    fields = {f.name: f.type for f in msgspec.structs.fields(Config)}
    for item in re.split(r"^- ", section, flags=re.M)[1:]:
        head = re.match(r"`\[(\w+)\]`", item)
        assert head and head.group(1) in fields, item[:40]
        names = {f.name for f in msgspec.structs.fields(fields[head.group(1)])}
        listed = re.findall(r"`(\w+)`", item.split("(", 1)[0])
        assert set(listed) == names, (head.group(1), set(listed) ^ names)


def test_every_repository_path_the_docs_name_exists() -> None:
    named: set[tuple[str, str]] = set()
    for page, text in _pages().items():
        prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # examples' output left out
        for span in re.findall(r"`([^`\n]+)`", prose):
            # A path alone (`tests/e2e/test_crash.py`), or the script a command runs (`python
            # bench/x.py --runs 60`); not the paths of examples (`pytest tests/a.py::test_x`).
            path = r"((?:bench|tests|indexer|summarizer|docs|plugin)/[\w/.-]*\w)"
            paths = re.findall(rf"^{path}$|(?<![\w-])python (?:-\S+ )*{path}", span)
            named |= {(page, p) for pair in paths for p in pair if p}
    missing = sorted(f"{page}: {path}" for page, path in named if not (REPO / path).exists())
    assert len(named) > 100 and not missing, missing


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    """The anchors of a page's headings (outside code blocks), repeats numbered as GitHub does."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose, re.M):
        slug = _slug(heading)
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _links(text: str) -> list[str]:
    """The targets of a page's Markdown links and images, outside code blocks and spans."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def test_every_link_of_the_docs_resolves() -> None:
    broken = []
    for page, text in _pages().items():
        folder = (REPO / page).parent
        for link in _links(text):
            if re.match(r"https?://", link):
                continue
            path, _, anchor = link.partition("#")
            target = (folder / path).resolve() if path else REPO / page
            if not target.is_file() or REPO not in target.parents:
                broken.append(f"{page}: {link}")
            elif anchor and anchor not in _anchors(target.read_text(encoding="utf-8")):
                broken.append(f"{page}: {link} (no such heading)")
    assert not broken, broken


def test_readme_links_every_docs_page() -> None:
    linked = {link.partition("#")[0] for link in _links(README)}
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")}
    assert pages <= linked, f"README links no {sorted(pages - linked)}"


def test_readme_is_at_most_300_lines() -> None:
    lines = README.count("\n")
    assert lines <= README_MAX_LINES, f"README is {lines} lines; move detail to a page of docs/"


def test_readme_names_the_help_groups() -> None:
    from summarizer.cli.terminal.help_groups import GROUPS

    named = re.search(
        r"`ctxd --help` lists the commands by what you do with them \(([^)]*)\)", README
    )
    assert named, "README does not say how `ctxd --help` groups the commands"
    assert [t.strip() for t in named.group(1).split(",")] == [title for title, _ in GROUPS]


def test_readme_names_every_runtime_dependency() -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    needed = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    for page in ("README.md", "docs/install.md"):
        named = re.search(r"ctxd's dependencies \(([^)]*)\)", _pages()[page])
        assert named, f"{page} does not list ctxd's dependencies"
        listed = {n.strip().lower() for n in named.group(1).split(",")}
        assert listed == needed, (page, listed ^ needed)


def _shown_commands(text: str) -> list[str]:
    """The whole `ctxd …` commands a page shows: the lines of its code blocks, without their
    comments (in a block with `$ ` prompts, only the prompted lines: the rest is output)."""
    found = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
        lines = block.splitlines()
        if any(line.startswith("$ ") for line in lines):
            lines = [line.removeprefix("$ ") for line in lines if line.startswith("$ ")]
        for line in lines:
            command = re.split(r"\s+#(?:\s|$)", line, maxsplit=1)[0].strip()
            if command.startswith("ctxd "):
                found.append(command)
    return found


def _named_commands(text: str) -> list[str]:
    """The `ctxd …` code spans of a page's prose: a command, often with some of its options
    (`ctxd read --lines 100`); spans in the reference tables' `[--optional] a|b` syntax and
    placeholders for the command itself (`ctxd COMMAND --help`) are left out."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    spans = re.findall(r"`(ctxd [^`\n]+)`", prose)
    return [s for s in spans if not re.search(r"[\[\]|…<>]|\\|ctxd [A-Z]", s)]


def _parser_of(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the (sub)command the words name, and the words after its name."""
    parser = build_parser()
    while words:
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not nested or words[0] not in nested[0].choices:
            break
        parser, words = nested[0].choices[words[0]], words[1:]
    return parser, words


def test_every_command_the_docs_show_is_one_ctxd_accepts() -> None:
    import contextlib
    import io
    import shlex

    checked, refused = 0, []
    for page, text in _pages().items():
        for line in _shown_commands(text):
            stderr = io.StringIO()
            try:
                with contextlib.redirect_stderr(stderr):
                    build_parser().parse_args(shlex.split(line)[1:])
            except SystemExit:
                refused.append(f"{page}: {line}: {stderr.getvalue().strip().splitlines()[-1]}")
            checked += 1
    assert checked > 30 and not refused, refused


def test_every_command_the_docs_name_exists_with_its_options() -> None:
    import shlex

    checked, wrong = 0, []
    for page, text in _pages().items():
        for span in _named_commands(text):
            words = shlex.split(span)[1:]
            parser, rest = _parser_of(words)
            if parser.prog == "ctxd" and words and words[0] not in ("--help", "--version"):
                wrong.append(f"{page}: `{span}`: no command {words[0]}")
                continue
            known = {o for a in parser._actions for o in a.option_strings}
            options = [w.split("=", 1)[0] for w in rest if re.match(r"--?[a-z]", w)]
            wrong += [f"{page}: `{span}`: no option {o}" for o in options if o not in known]
            checked += 1
    assert checked > 200 and not wrong, wrong


def test_every_config_key_the_docs_name_is_a_real_key() -> None:
    sections = {f.name: f.type for f in msgspec.structs.fields(Config)}
    wrong = []
    for page, text in _pages().items():
        # "`[resume] subagent_max_tokens`", "[daemon] autostart = true", "`[team] dsn`, `startup`"
        for section, keys in re.findall(r"\[([a-z]+)\]`? `?(\w+(?:`?, `\w+)*)", text):
            if section not in sections:
                continue  # a TOML table of another file ([features], [tool.mutmut], …)
            known = {f.name for f in msgspec.structs.fields(sections[section])}
            wrong += [
                f"{page}: [{section}] {k}" for k in re.split(r"`?, `", keys) if k not in known
            ]
    assert not wrong, wrong


def test_every_bench_command_the_docs_show_exists_with_its_options() -> None:
    wrong, checked = [], 0
    for page, text in _pages().items():
        for command in re.findall(r"python (bench/\w+\.py)((?: [^`|;)\n]*)?)", text):
            script, args = REPO / command[0], command[1]
            if not script.is_file():
                wrong.append(f"{page}: {command[0]} does not exist")
                continue
            source = script.read_text(encoding="utf-8")
            for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", args):
                negated = option.removeprefix("--no-")
                if f'"{option}"' not in source and not (
                    option.startswith("--no-") and f'"--{negated}"' in source
                ):
                    wrong.append(f"{page}: {command[0]} has no option {option}")
            checked += 1
    assert checked > 30 and not wrong, wrong
