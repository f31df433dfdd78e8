"""Where the tests find the repository and the shared spec."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The spec lives in ../shared next to the checkout (CI lays it out the same way).
SPEC_DIR = Path(os.environ.get("SHELLGATE_SPEC_DIR", REPO_ROOT.parent / "shared" / "spec"))
