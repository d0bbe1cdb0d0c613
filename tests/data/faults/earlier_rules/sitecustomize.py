"""Test fault: ctxd as an earlier version was, without the rules that find passwords by their
context (command flags, credential files, cookies, prose).

Python imports this module at start when its folder is on PYTHONPATH: the real `ctxd ingest`
then stores those passwords as typed, as an index written before the rules existed holds them.
"""

import indexer.redact.passwords as _commands
import indexer.redact.rules as _rules

_later = {rule.kind for rule in _commands.CONTEXT_RULES}
_rules.RULES = tuple(rule for rule in _rules.RULES if rule.kind not in _later)
_rules.KINDS = tuple(sorted({rule.kind for rule in _rules.RULES}))
