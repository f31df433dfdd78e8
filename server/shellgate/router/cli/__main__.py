"""`python -m shellgate.router.cli`: the same as the `shellgate` command."""

import sys

from shellgate.router.cli.main import main

sys.exit(main())
