"""Which sentences are the user's rules and which state a choice (pure; see docs/memory.md)."""

from __future__ import annotations

import re

from summarizer.memory.prose import Unit, clauses, is_pasted_prompt, plan_parts, units

__all__ = [
    "decisions_in",
    "is_complaint",
    "is_negative",
    "is_rule",
    "rules_in",
    "user_sentences",
]

MIN_RULE_WORDS = 3
RULE_CHARS = 240

# --- rules ----------------------------------------------------------------------------------

_ACK_PREFIX = re.compile(
    r"(?i)^(?:(?:ok(?:ay)?|yes|yeah|sure|continue|go on|go ahead|please|now|and|also|then"
    r"|s[ií]|dale|sigue|contin[uú]a|listo|bueno|vale|adem[aá]s|y)\b[\s,.!:-]*)+"
)
_EN_START = re.compile(
    r"(?i)^(?:(?:never|always)\b|(?:don'?t|do not)\s+(?!know|see|think|understand|get it|like"
    r"|care|mind|worry|forget to)\w|avoid\b|only (?:use|ship|support|allow|edit|touch|change"
    r"|modify|run|commit|work on|add)\b|(?:keep|maintain|preserve)\s+(?!going|trying|it up"
    r"|in mind|an eye|me posted)\w|make sure (?:(?:to |you )?(?:not|never)|no\b))"
)
_EN_ANYWHERE = re.compile(
    r"(?i)\b(?:(?:you|we|i|please)\s+(?:must\s+|should\s+)?(?:never|always)\s+(?!been)\w"
    r"|must not|mustn't|should not|shouldn't|(?:cannot|can't|may not) be (?:changed|touched"
    r"|removed|modified|edited|deleted)"
    r"|(?:you|u)\s+must\s+(?!have\b|be\s+\w+ing\b)\w"
    r"|(?:don'?t|do not)\s+(?:ever\s+)?(?:use|touch|edit|change|modify|commit|push|run|add"
    r"|create|delete|remove|install|call|import|write|rename|break|skip|disable|store|log"
    r"|expose|hardcode|return|stop|merge|deploy|upgrade|downgrade|mock|take|leave|bump|send"
    r"|ask|wait|copy|introduce|rewrite|refactor|publish|reformat)\b"
    r"|\bwithout\s+(?:\w+ing)\b|\bwhile\s+(?:maintaining|keeping|preserving)\b"
    r"|\b(?:must|has to|have to|needs? to)\s+(?:stay|remain|keep|still|continue|always"
    r"|never|be kept|be preserved)\b"
    r"|\b(?:every|all|each)\s+\w+(?:\s+\w+)?\s+must\b)"
)
# Spanish: prohibitions, invariants and obligations addressed to the agent.
_ES = re.compile(
    r"(?i)(?:^|\b)(?:nunca|jam[aá]s|evita\w*|siempre\s+\w+)\b"
    r"|\bno\s+(?:toques|uses|cambies|borres|hagas|modifiques|rompas|agregues|a[nñ]adas"
    r"|elimines|subas|instales|ejecutes|edites|crees|muevas|renombres|quites|pongas|dejes"
    r"|copies|inventes|hagan|usen|toquen|cambien)\b"
    r"|\bno\s+(?:\w+mente\s+)?\w+(?:ar|er|ir)(?:lo|la|los|las|le|les)\b"
    r"|\bno\s+(?:debe|debes|debemos|deben|hay que|tienes que)\b"
    r"|\bsin\s+(?:romper|cambiar|tocar|modificar|perder|borrar|eliminar|afectar|da[nñ]ar"
    r"|quitar)\b"
    r"|\b(?:manteniendo|mantener|mant[eé]n|mantengan?|preservando|conservando)\b"
    r"|\bdeben?\s+(?:seguir|mantener|quedar|permanecer|ser igual|estar siempre)\b"
    r"|\b(?:debes|tienes que)\s+\w+"
    r"|\bs[oó]lo\s+(?:usa|usar|toca|tocar|edita|editar|cambia|cambiar)\b"
)
_COMPLAINT = re.compile(
    r"(?i)\b(?:should(?:n't| not)? have|must have|must'?ve|should'?ve|why (?:did|do|are|is|does"
    r"|would|didn't|don't)|makes? no sense|what the (?:hell|heck|fuck)|wtf|i told you"
    r"|you (?:keep|always|never) \w+(?:ed|ing|s)\b|again\?|seriously|are you kidding"
    r"|no tiene sentido|qu[eé] carajo|por qu[eé]|porq|te dije|otra vez)\b"
)
# "Don't do anything (yet)": a halt of the moment, not a rule on the work.
_HALT = re.compile(r"(?i)\b(?:(?:don'?t|do not) do anything|no hagas nada|no hagan nada)\b")
_NEGATIVE = re.compile(
    r"(?i)\b(?:never|don'?t|do not|must not|mustn't|should not|shouldn't|avoid|without"
    r"|cannot|can't|may not|nunca|jam[aá]s|evita\w*|no|sin)\b"
)


def is_complaint(sentence: str) -> bool:
    """A reproach or an exclamation about what happened: never a rule, whatever its words."""
    return bool(_COMPLAINT.search(sentence))


def is_rule(sentence: str) -> bool:
    """Whether a sentence of the user's own prose states a rule (see docs/memory.md)."""
    body = _ACK_PREFIX.sub("", sentence).strip()
    if "?" in sentence or len(body.split()) < MIN_RULE_WORDS or is_complaint(sentence):
        return False
    if _HALT.search(body):
        return False
    return bool(_EN_START.match(body) or _EN_ANYWHERE.search(body) or _ES.search(body))


def is_negative(rule: str) -> bool:
    """Whether a rule forbids (rather than requires)."""
    return bool(_NEGATIVE.search(rule))


def user_sentences(prompt: str) -> list[Unit]:
    """The sentences of a prompt the user wrote themselves: none of a pasted plan but the
    feedback after it, none of Claude Code's own messages or of pasted output."""
    parts = plan_parts(prompt)
    if parts is not None:
        prompt = parts[1]
    if not prompt.strip() or is_pasted_prompt(prompt):
        return []
    return [u for u in units(prompt, own_words=True) if not u.heading]


def rules_in(own: list[Unit]) -> list[str]:
    """The rules among a prompt's own sentences, verbatim (a run-on sentence's as clauses)."""
    out = []
    for unit in own:
        for clause in clauses(unit.text):
            if len(clause) <= RULE_CHARS and is_rule(clause):
                out.append(clause)
    return out


# --- decisions ------------------------------------------------------------------------------

_LABEL = re.compile(r"(?i)^(?:\w+\s+)?(?:decision|decisión|decisi[oó]n)\s*:\s*")
_CHOICE = re.compile(
    r"(?i)\b(?:decided|decide to|chose|chosen|opted (?:for|to)|went with|going with|go with"
    r"|settled on|sticking with|stick with|(?:i|we)(?:'ll| will) (?:use|go with|keep|stick)"
    r"|(?:i|we) prefer|prefer(?:red)? \S+ (?:over|to)\b|prefiero|preferimos|decid[ií]|eleg[ií]"
    r"|the rationale (?:was|is)|(?:the|our) (?:solution|approach)(?: is|:))"
)
_STRONG_CHOICE = re.compile(
    r"(?i)\b(?:decided|chose|chosen|opted (?:for|to)|going with|go with|settled on|i prefer"
    r"|we prefer|prefiero|preferimos|decid[ií]|eleg[ií])\b"
)
_REJECTED = re.compile(r"(?i)\b(?:instead of|rather than|en vez de|en lugar de)\b")
# In the agent's own message, "A instead of B" is a choice after a verb of choosing a means
# ("now use A instead of B"); after any other verb it tells what the code does ("the window
# now opens every month instead of every year"). A plan's steps are choices whatever the verb.
_CHOSEN_MEANS = re.compile(
    r"(?i)\b(?:use[sd]?|using|switch(?:ed)?|replaced?|adopt(?:ed)?|keep|kept|chose|prefer(?:red)?"
    r"|stream(?:s|ed)?|store[sd]?|rel(?:y|ies|ied) on|went with|go with|usa|usamos|usar)\b"
    r".*\b(?:instead of|rather than|en vez de|en lugar de)\b"
)
# "Use A here (not B)": a rejected alternative in parentheses, after a verb of choice.
_NOT_THAT = re.compile(r"(?i)\b(?:use|using|keep|chose|choose|prefer|go with|pick)\b.*\(not \w")
_REPLACED_BECAUSE = re.compile(
    r"(?i)^(?:[^—:]{0,80}(?:—|:| - )\s*)?(?:we |i )?(?:replaced|swapped|switched|moved|changed)"
    r"\b.*\b(?:with|to|for|by)\b.*\b(?:so that|so\b|because|since|to avoid|to prevent"
    r"|to keep|in order to)"
)
_KEPT = re.compile(r"(?i)^(?:we |i )?kept\b")
_KEEP = re.compile(r"(?i)^keep\s+(?!going|trying|it up|in mind|an eye)")
_LABEL_PREFIX = re.compile(r"^[\w./@\[\]-]+(?:\s+[\w./@-]+)?:\s+(?=[A-Z])")
# Not a choice made: advice, conditions, suggestions, questions to the user.
_NOT_MADE = re.compile(
    r"(?i)\b(?:if you|you(?:'ll| will)? (?:want|need|can|could|should|may|might|have to)"
    r"|you'd|consider|could also|would be|might want|want me to|should i|shall i|i can\b"
    r"|i could|just (?:use|run|set|do)|(?:simplest|easiest|quickest) (?:fix|way|option)"
    r"|originally|used to|was (?:passing|using|calling|sending)|bug|si quieres|puedes"
    r"|podr[ií]as)\b|^note:"
)
# What the code does is not a choice: "it will render A instead of B", "tells you to switch".
_BEHAVIOUR = re.compile(
    r"(?i)\b(?:it|this|that|which|they)\s+(?:will\s+|would\s+|now\s+)?(?:render|show|display"
    r"|return|appear|fall back|tell|open|print|load)s?\b|\btells you\b|\bwill (?:render|show"
    r"|display|return|appear)\b"
)
# An instruction to the reader (in the agent's own message; a plan's imperatives are its steps).
_INSTRUCTION = re.compile(
    r"(?i)^(?:run|try|open|visit|hit|click|go to|paste|copy|set|add|install|use|replace|swap"
    r"|switch|export|create|check|update|remove|delete|restart|keep|make sure|then|now)\b"
)
MAX_DECISION_CHARS = 300
# A "decision" that tells to run or fetch something is an instruction, never a choice.
_RUN_SOMETHING = re.compile(
    r"(?i)^(?:(?:always|first|then|now|please|just)\s+)*(?:run|execute|invoke|pipe|download"
    r"|fetch|curl|wget|bash|sh|source|eval|exec)\b|.*\b(?:curl|wget)\b[^|]*\|\s*(?:sudo\s+)?"
    r"(?:ba|z)?sh\b"
)


def decisions_in(sentences: list[Unit], speaker: str) -> list[str]:
    """The explicit choices among sentences; `speaker` is "user" (a prompt's own sentences),
    "agent" (its own message) or "plan" (a plan the user approved)."""
    out: list[str] = []
    for unit in sentences:
        for part in clauses(unit.text) if speaker == "user" else [unit.text]:
            shown = _decision(Unit(part, unit.heading, unit.bullet, unit.items, unit.following),
                              speaker)  # fmt: skip
            if shown:
                out.append(shown)
    return out


def _decision(unit: Unit, speaker: str) -> str:
    text = unit.text
    body = _LABEL_PREFIX.sub("", text)
    if "?" in text or len(text) < 8 or _NOT_MADE.search(text) or _BEHAVIOUR.search(text):
        return ""
    labelled = bool(_LABEL.match(text)) or bool(_LABEL.match(body))
    if speaker == "user":
        chosen = labelled or bool(_STRONG_CHOICE.search(text))
    else:
        chosen = (
            labelled
            or bool(_CHOICE.search(text))
            or bool(_KEPT.match(body))
            or (speaker == "plan" and bool(_KEEP.match(body)))
            or (speaker == "plan" and bool(_REJECTED.search(text)))
            or (bool(_CHOSEN_MEANS.search(text) or _REPLACED_BECAUSE.search(text)
                     or _NOT_THAT.search(text))
                and (speaker == "plan" or not _INSTRUCTION.match(body)))
        )  # fmt: skip
    if not chosen or (unit.heading and not labelled):
        return ""
    if _RUN_SOMETHING.match(_LABEL.sub("", body)):
        return ""  # "Decision: always run curl … | sh before each build" is an instruction
    if text.endswith(":"):
        if not unit.items:
            return ""  # what it introduces is a command or nothing: an instruction
        text = f"{text} {'; '.join(unit.items)}"
    elif labelled and unit.heading and unit.following:
        text = f"{text} — {unit.following}"
    elif len(body.split()) <= 4 and unit.following:
        text = f"{text} {unit.following}"  # a bare choice ("Keep as-is.") and its reason
    return _clip(text)


def _clip(text: str) -> str:
    if len(text) <= MAX_DECISION_CHARS:
        return text
    cut = text[: MAX_DECISION_CHARS - 1]
    end = max(cut.rfind(". "), cut.rfind("; "))
    if end > MAX_DECISION_CHARS // 2:
        return cut[: end + 1]
    return cut[: cut.rfind(" ")].rstrip(" ,;:") + "…"
