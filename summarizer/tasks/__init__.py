"""Task context cache: immutable task snapshots, role coordination and worktree deltas."""
