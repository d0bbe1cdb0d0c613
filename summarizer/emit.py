"""`summarizer.emit.emit`, the public name of `summarizer.memory.emit.emit`."""

from summarizer.memory.emit import emit

__all__ = ["emit"]
