"""The daemon `ctxd run` and the jobs it runs: compaction, sessions, retention."""
