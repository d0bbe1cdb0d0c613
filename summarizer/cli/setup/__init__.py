"""Installing ctxd into a project and checking the install: `ctxd init` and `ctxd doctor`."""
