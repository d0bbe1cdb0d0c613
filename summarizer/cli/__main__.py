"""`python -m summarizer.cli`: the `ctxd` command line."""

import sys

from summarizer.cli.app import main

sys.exit(main())
