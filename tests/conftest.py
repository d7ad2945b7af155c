"""Shared test setup: make the repository root importable (for ``oracles``), and
keep STPA's decision cache off (a test that wants it turns it on): a decision
remembered by one test must not skip another's preflight."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("SEER_STPA_CACHE", "0")
