"""The task cache's exception tree; each message says what happened and how to recover.

CtxdError (indexer.errors)
└── TaskError                 any task-cache failure
    ├── InvalidTaskIdError    a TASK-ID cannot name a directory
    ├── ContextExistsError    init on a task that already has a context
    ├── ContextNotFoundError  no context, or no snapshot for the role asked about
    ├── TaskValidationError   bad input: a secret, a bad role or status, a bad task file
    ├── LockTimeoutError      another process held the task lock for 10 s
    ├── GitError              a git command failed (not a repository, unknown commit)
    └── DriftError            the working tree differs from the previous role's snapshot
"""

from __future__ import annotations

from indexer import CtxdError


class TaskError(CtxdError):
    """Base of the task cache's errors."""


class InvalidTaskIdError(TaskError, ValueError):
    """A TASK-ID is not safe to use as a path part."""


class ContextExistsError(TaskError):
    """The task already has a context."""


class ContextNotFoundError(TaskError):
    """The task has no context, or the role has no snapshot."""


class TaskValidationError(TaskError, ValueError):
    """Input the cache refuses to store."""


class LockTimeoutError(TaskError):
    """The task store's lock could not be taken in time."""


class GitError(TaskError):
    """A git command failed."""


class DriftError(TaskError):
    """The working tree drifted from the recorded snapshot."""

    def __init__(self, message: str, report: list[str]) -> None:
        super().__init__(message)
        self.report = report
