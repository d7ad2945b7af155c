"""Test models, built through the model SDK exactly as users' models are.

* ``probe``: breaks the event-locality contract on demand (``probe.h``).
* ``dying``: agents that finish at different steps.
* ``nonmono``: zero-delay events against the key order (lookahead 0), for the
  optimistic executor's serial reruns.
* ``broken/``: one model per rule the contract checker enforces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def load(name: str) -> Any:
    """The test model ``name`` (built on first use, cached by content)."""
    from seer_env import sdk

    return sdk.load(HERE / name)


def life(seed: int, agent: int) -> int:
    """Steps agent ``agent`` of a ``dying`` instance seeded ``seed`` lives."""
    return 1 + (seed + agent // 2) % 4


def ends_terminated(seed: int, agent: int) -> bool:
    """Whether that agent terminates (else it truncates)."""
    return (seed + agent) % 2 == 0


N_ACTIONS = 3
