"""Recorded text that addresses the model is left out of what ctxd hands back (pure, stdlib).

Tool output, files and other agents' answers are data. A passage in them that speaks to the
model ("ignore all previous instructions", "SYSTEM:", "</user>", "<|im_start|>", "you are now
…") would come back with ctxd's authority in the notes, the startup memory, a subagent's
handoff, `ctxd inject` and the MCP answers: its sentence is dropped there, and one marker says
that something was left out. The index keeps the text as recorded (search finds it).
"""

from __future__ import annotations

import re

__all__ = ["MARK", "NEUTRALIZED_META", "addresses_model", "neutralize"]

MARK = "[recorded text that addressed the model was left out]"
# The index's meta key counting the passages the memory left out (`ctxd doctor` reports it).
NEUTRALIZED_META = "mem.neutralized"

_ADDRESSES_MODEL = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}?"
    r"\b(?:previous|prior|above|earlier|preceding|all|any|your|the|system|existing)\b[^.\n]{0,30}?"
    r"\b(?:instructions?|prompts?|directions?|rules|guidelines|messages|context|constraints)\b"
    r"|(?:(?m:^)|(?<=[.!?]\s))[ \t>*#\[(-]*(?:system|assistant|human|developer|(?-i:USER))"
    r"(?:[ \t]+(?:prompt"
    r"|message|instructions?|override|note))?[ \t]*[\])*]*[ \t]*:"
    r"|</?[ \t]*(?:system|assistant|user|human|instructions?|system-reminder|im_start|im_end"
    r"|tool_call|function_calls?|antml:[\w-]+)\b[^>\n]*>"
    r"|<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>"
    r"|\[/?INST\]|<</?SYS>>"
    r"|\byou are now\b|\bfrom now on,? you (?:are|will|must)\b|\bnew (?:system )?instructions?\s*:"
    r"|\b(?:reveal|print|show|output|leak|repeat)\s+(?:your|the)\s+(?:system prompt|hidden"
    r"|instructions)"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")


def addresses_model(text: str) -> bool:
    """Whether `text` holds a passage that speaks to the model."""
    return bool(_ADDRESSES_MODEL.search(text))


def neutralize(text: str) -> tuple[str, int]:
    """`text` without the sentences that address the model, each run of them replaced by one
    MARK; and how many sentences were left out (0: `text` unchanged)."""
    if not text or not _ADDRESSES_MODEL.search(text):
        return text, 0
    dropped = 0
    lines_out: list[str] = []
    for line in text.split("\n"):
        if not _ADDRESSES_MODEL.search(line):
            lines_out.append(line)
            continue
        kept: list[str] = []
        for sentence in _SENTENCE.split(line):
            if _ADDRESSES_MODEL.search(sentence):
                dropped += 1
                if not kept or kept[-1] != MARK:
                    kept.append(MARK)
            else:
                kept.append(sentence)
        joined = " ".join(kept)
        if not (lines_out and lines_out[-1] == MARK and joined == MARK):
            lines_out.append(joined)
    return "\n".join(lines_out), dropped
