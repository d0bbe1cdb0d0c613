"""The team database's schema: versioned migrations, each in one transaction, and its check.

Every table lives in the `ctxd` schema and every row carries the machine, user and project it
came from. Row-level security is on from the first version: the owner (who ran `ctxd team
init`) sees everything, any other role only what `ctxd.writers` and `ctxd.readers` map it to
(see summarizer/team/roles.py and docs/team.md).
"""

from __future__ import annotations

from typing import Any

from summarizer.team.errors import TeamPermissionError, TeamSchemaError
from summarizer.team.pg import driver, translate_errors

__all__ = ["LATEST", "MIGRATIONS", "check_schema", "migrate", "schema_version"]

SCHEMA = "ctxd"
# A constant key for pg_advisory_xact_lock: two `ctxd team init` at once apply each
# migration once (the second waits, then finds it applied).
_LOCK_KEY = 0x637478645F74656D  # "ctxd_tem"

# What local search indexes of an event, as one text: the same parts, the same exceptions
# (indexer/search/sql.py). Immutable, so the generated search column may use it.
_ENTRY_BODY = """
CREATE FUNCTION ctxd.entry_body(event text, description text, instruction text,
    output_summary text, error text, content text, files text, command text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT trim(
    CASE WHEN event IN ('prompt', 'stop', 'subagent_stop', 'compact_summary') THEN ''
         ELSE description END
    || ' ' || instruction || ' ' || output_summary || ' ' || error
    || ' ' || CASE WHEN content = output_summary THEN '' ELSE content END
    || ' ' || files || ' ' || command) $$
"""
# Words as local search (SQLite's unicode61) splits them, every run of letters and digits, as
# far as PostgreSQL's parser allows: it keeps `src/app.py`, `a@b.c`, `x-y`, `<tag>` or `+1`
# whole (or drops them), so those characters become spaces first. replace() costs ~10 % of
# to_tsvector; a regexp_replace on every non-alphanumeric character cost ~85 %. Hex such as
# `1e3a8a` is read as a number and a word; queries are parsed the same way, so they still match.
_SPLIT = "/.@-<>+&"
_WORDS = "to_tsvector('simple'::regconfig, {})"


def _spaced(expression: str) -> str:
    for char in _SPLIT:
        expression = f"replace({expression}, '{char}', ' ')"
    return _WORDS.format(expression)


_TSV_ENTRY = _spaced(
    "ctxd.entry_body(event, description, instruction, output_summary, error, text, files, command)"
)
_TSV_MEMORY = _spaced("summary || ' ' || command || ' ' || error || ' ' || prevention")
_MINE = (
    "machine_id IN (SELECT w.machine_id FROM ctxd.writers w JOIN pg_catalog.pg_roles r"
    " ON r.rolname = w.role_name WHERE pg_has_role(r.oid, 'MEMBER'))"
)
_PROJECTS = (
    "project IN (SELECT d.project FROM ctxd.readers d JOIN pg_catalog.pg_roles r"
    " ON r.rolname = d.role_name WHERE pg_has_role(r.oid, 'MEMBER'))"
)
_DATA_TABLES = ("machines", "entries", "sessions", "agents", "memory")
# Rows per arrival block of the search index (entries.seq / BLOCK).
BLOCK = 4096


def _policies() -> list[str]:
    out = []
    for table in _DATA_TABLES:
        out += [
            f"ALTER TABLE ctxd.{table} ENABLE ROW LEVEL SECURITY",
            f"CREATE POLICY own_machine ON ctxd.{table} FOR ALL TO PUBLIC"
            f" USING ({_MINE}) WITH CHECK ({_MINE})",
            f"CREATE POLICY project_reader ON ctxd.{table} FOR SELECT TO PUBLIC"
            f" USING ({_PROJECTS})",
        ]
    for table in ("writers", "readers"):
        out += [
            f"ALTER TABLE ctxd.{table} ENABLE ROW LEVEL SECURITY",
            f"CREATE POLICY own_mapping ON ctxd.{table} FOR SELECT TO PUBLIC USING (role_name IN"
            " (SELECT rolname FROM pg_catalog.pg_roles WHERE pg_has_role(oid, 'MEMBER')))",
        ]
    return out


_V1 = [
    """CREATE TABLE ctxd.machines(
        machine_id text PRIMARY KEY CHECK (machine_id ~ '^[0-9a-f]{32}$'),
        project text NOT NULL, user_name text NOT NULL, host text NOT NULL,
        index_id text NOT NULL DEFAULT '', entry_cursor bigint NOT NULL DEFAULT 0,
        purge_seq bigint NOT NULL DEFAULT 0, memory_mark bigint NOT NULL DEFAULT 0,
        rows_shipped bigint NOT NULL DEFAULT 0,
        first_seen timestamptz NOT NULL DEFAULT now(),
        last_ship timestamptz NOT NULL DEFAULT now())""",
    _ENTRY_BODY,
    f"""CREATE TABLE ctxd.entries(
        machine_id text NOT NULL, entry_id bigint NOT NULL,
        project text NOT NULL, user_name text NOT NULL,
        session_id text NOT NULL, agent_id text NOT NULL, ts_ns bigint NOT NULL,
        hook_event text NOT NULL, event text NOT NULL, kind text NOT NULL,
        agent_type text NOT NULL, cc_agent_id text NOT NULL,
        tool_name text NOT NULL, tool_use_id text NOT NULL, description text NOT NULL,
        instruction text NOT NULL, output_summary text NOT NULL, error text NOT NULL,
        files text NOT NULL, text text NOT NULL, cwd text NOT NULL, command text NOT NULL,
        search tsvector GENERATED ALWAYS AS
            (CASE WHEN kind <> '' THEN {_TSV_ENTRY} END) STORED,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (machine_id, entry_id))""",
    # The search index also holds each row's arrival block (seq / 4096), kind and agent (as
    # local search's index holds its tags): a search looks in the newest blocks first, and
    # words, blocks and filters intersect inside the index (see summarizer/team/search.py).
    # `{int8}` and `{text}` come from btree_gin.
    f"CREATE INDEX entries_search ON ctxd.entries USING gin ((seq / {BLOCK}) {{int8}},"
    " kind {text}, agent_id {text}, search)",
    "CREATE INDEX entries_newest ON ctxd.entries (project, seq)",
    "CREATE INDEX entries_session ON ctxd.entries (machine_id, session_id)",
    "CREATE INDEX entries_files ON ctxd.entries USING gin (files {trgm}) WHERE files <> ''",
    "CREATE INDEX entries_command ON ctxd.entries USING gin (command {trgm}) WHERE command <> ''",
    """CREATE TABLE ctxd.sessions(
        machine_id text NOT NULL, session_id text NOT NULL,
        project text NOT NULL, user_name text NOT NULL,
        first_ns bigint NOT NULL, last_ns bigint NOT NULL, cwd text NOT NULL,
        title text NOT NULL, first_prompt text NOT NULL, events bigint NOT NULL,
        failures bigint NOT NULL, status text NOT NULL, end_reason text NOT NULL,
        compactions bigint NOT NULL, host text NOT NULL,
        PRIMARY KEY (machine_id, session_id))""",
    "CREATE INDEX sessions_recent ON ctxd.sessions (project, first_ns)",
    """CREATE TABLE ctxd.agents(
        machine_id text NOT NULL, session_id text NOT NULL, agent_id text NOT NULL,
        project text NOT NULL, user_name text NOT NULL,
        agent_type text NOT NULL, cc_agent_id text NOT NULL, status text NOT NULL,
        started_ns bigint NOT NULL, last_ns bigint NOT NULL, completed_ns bigint NOT NULL,
        description text NOT NULL,
        PRIMARY KEY (machine_id, session_id, agent_id))""",
    f"""CREATE TABLE ctxd.memory(
        machine_id text NOT NULL, kind text NOT NULL
            CHECK (kind IN ('decision', 'constraint', 'failure')),
        item_key text NOT NULL, project text NOT NULL, user_name text NOT NULL,
        session_id text NOT NULL, agent_id text NOT NULL, summary text NOT NULL,
        command text NOT NULL, error text NOT NULL, prevention text NOT NULL,
        source text NOT NULL, feature_id text NOT NULL, count bigint NOT NULL,
        first_ns bigint NOT NULL, last_ns bigint NOT NULL, active boolean NOT NULL,
        resolved_ns bigint NOT NULL,
        search tsvector GENERATED ALWAYS AS ({_TSV_MEMORY}) STORED,
        PRIMARY KEY (machine_id, kind, item_key))""",
    "CREATE INDEX memory_search ON ctxd.memory USING gin (search)",
    "CREATE INDEX memory_recent ON ctxd.memory (project, kind, last_ns)",
    "CREATE INDEX memory_session ON ctxd.memory (machine_id, session_id)",
    """CREATE TABLE ctxd.writers(
        role_name text PRIMARY KEY, machine_id text NOT NULL,
        created timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE ctxd.readers(
        role_name text NOT NULL, project text NOT NULL,
        created timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (role_name, project))""",
    *_policies(),
]

# Version -> its statements. A new version appends; a released one never changes.
MIGRATIONS: dict[int, list[str]] = {1: _V1}
LATEST = max(MIGRATIONS)


def schema_version(conn: Any) -> int:
    """The version of the team schema in this database (0: none yet)."""
    with translate_errors("reading the team schema version"):
        row = conn.execute("SELECT to_regclass('ctxd.schema_migrations') IS NOT NULL").fetchone()
        if not row[0]:
            return 0
        found = conn.execute("SELECT coalesce(max(version), 0) FROM ctxd.schema_migrations")
        return int(found.fetchone()[0])


def check_schema(conn: Any) -> int:
    """The schema version, if this ctxd can use it; TeamSchemaError says what to do if not."""
    version = schema_version(conn)
    if version == 0:
        raise TeamSchemaError("the team database has no ctxd tables yet; run `ctxd team init`")
    if version > LATEST:
        raise TeamSchemaError(
            f"the team database's schema is version {version}, newer than this ctxd knows "
            f"({LATEST}); upgrade ctxd on this machine"
        )
    if version < LATEST:
        raise TeamSchemaError(
            f"the team database's schema is version {version}, older than this ctxd's "
            f"({LATEST}); run `ctxd team init` to upgrade it"
        )
    return version


def migrate(conn: Any) -> tuple[int, list[int]]:
    """Apply every migration not applied yet, one transaction each; return (the version
    now, the versions applied). Refuses a schema newer than this ctxd knows."""
    applied: list[int] = []
    for version in sorted(MIGRATIONS):
        with translate_errors(f"applying team schema version {version}"), conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            current = _locked_version(conn)
            if current > LATEST:
                raise TeamSchemaError(
                    f"the team database's schema is version {current}, newer than this ctxd "
                    f"knows ({LATEST}); upgrade ctxd"
                )
            if current >= version:
                continue
            classes = {
                "{trgm}": _operator_class(conn, "pg_trgm", "gin_trgm_ops"),
                "{int8}": _operator_class(conn, "btree_gin", "int8_ops"),
                "{text}": _operator_class(conn, "btree_gin", "text_ops"),
            }
            for statement in MIGRATIONS[version]:
                conn.execute(_qualified(statement, classes))
            conn.execute("INSERT INTO ctxd.schema_migrations(version) VALUES (%s)", (version,))
            applied.append(version)
    return schema_version(conn), applied


def _qualified(statement: str, classes: dict[str, str]) -> str:
    """`statement` with each `{name}` placeholder replaced by its qualified operator class."""
    for name, qualified in classes.items():
        statement = statement.replace(name, qualified)
    return statement


def _locked_version(conn: Any) -> int:
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS ctxd.schema_migrations(version integer PRIMARY KEY,"
        " applied_at timestamptz NOT NULL DEFAULT now(),"
        " applied_by text NOT NULL DEFAULT current_user)"
    )
    row = conn.execute("SELECT coalesce(max(version), 0) FROM ctxd.schema_migrations").fetchone()
    return int(row[0])


def _operator_class(conn: Any, extension: str, name: str) -> str:
    """An operator class of an extension, qualified by the schema the extension lives in
    (installed into `ctxd` when missing: pg_trgm and btree_gin are trusted extensions, which
    the database owner may install)."""
    pg = driver()
    found = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = %s",
        (extension,),
    ).fetchone()
    if found is None:
        try:
            with conn.transaction():  # a savepoint: a refusal leaves the migration usable
                conn.execute(f"CREATE EXTENSION {extension} SCHEMA {SCHEMA}")
        except pg.errors.InsufficientPrivilege as e:
            raise TeamPermissionError(
                f"the {extension} extension is missing and this role may not create it; ask a "
                f"database administrator to run `CREATE EXTENSION {extension}`, then run "
                "`ctxd team init` again"
            ) from e
        return f"{SCHEMA}.{name}"
    return f'"{found[0]}".{name}'
