"""The old path of [`seer_env.check.race`][seer_env.check.race] (the race pass), kept
so that imports of it keep working."""

from __future__ import annotations

from .check.race import *  # noqa: F403
from .check.race import __all__ as _all

__all__ = list(_all)
