"""The handlers of the `ctxd` commands, one module per command or group of commands."""
