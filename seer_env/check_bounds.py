"""The old path of [`seer_env.check.bounds`][seer_env.check.bounds] (the bounds and
uninitialised-output passes), kept so that imports of it keep working."""

from __future__ import annotations

from .check.bounds import *  # noqa: F403
from .check.bounds import __all__ as _all

__all__ = list(_all)
