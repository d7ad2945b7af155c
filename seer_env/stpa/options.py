"""The controller's options, checked: `check_options` refuses a bad one with a
`ConfigError` naming it and what it takes, before a runtime or a controller is
made (``stpa_options=`` of `seer_env.registry.Runtime`, ``Stpa(...)``'s
keyword arguments, `seer_env.stpa.attach`).  A value the controller could only
fail on later (``probe_share=0``: a division by zero at the first step; NaN
anywhere: every comparison false) is a user's mistake, said at once, not the
controller's failure, logged in the middle of a run.

```python
from seer_env.stpa.options import check_options
check_options({"rounds": 2, "probe_share": None})    # {'rounds': 2, 'probe_share': None}
check_options({"probe_share": 0})
# ConfigError: stpa option probe_share=0 must be a number in (0, 1] or None
```

The bottom of `seer_env.stpa`'s layers, beside the cost model: it knows the
options' names and ranges, nothing of what they do (`seer_env.stpa.Stpa`'s
docstring says that).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._bind.runtime import max_threads
from ..errors import ConfigError

_Check = Callable[[str, Any], None]


def _refuse(name: str, value: Any, what: str) -> ConfigError:
    return ConfigError(f"stpa option {name}={value!r} must be {what}")


def _integer(lo: int, hi: int | Callable[[], int] | None = None,
             none: bool = False) -> _Check:
    """An int in [lo, hi] (hi: a bound, or a function giving it when an
    option is checked: the runtime's largest pool), or None where ``none``."""

    def check(name: str, value: Any) -> None:
        if value is None and none:
            return
        top = hi() if callable(hi) else hi
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or int(value) < lo or (top is not None and int(value) > top):
            what = f"an int in [{lo}, {top}]" if top is not None else f"an int >= {lo}"
            raise _refuse(name, value, what + (" or None" if none else ""))
    return check


def _number(lo: float, hi: float | None = None, *, lo_open: bool = False,
            hi_open: bool = False, infinite: bool = False, none: bool = False) -> _Check:
    left = "(" if lo_open else "["
    right = ")" if hi is None or hi_open else "]"
    what = f"a number in {left}{lo:g}, {'inf' if hi is None else f'{hi:g}'}{right}"
    what += ", inf included" if infinite else ""
    what += " or None" if none else ""

    def check(name: str, value: Any) -> None:
        if value is None and none:
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _refuse(name, value, what)
        v = float(value)
        if math.isnan(v) or (math.isinf(v) and not (infinite and v > 0)):
            raise _refuse(name, value, what)
        if v < lo or (lo_open and v == lo):
            raise _refuse(name, value, what)
        if hi is not None and (v > hi or (hi_open and v == hi)):
            raise _refuse(name, value, what)
    return check


def _flag(none: bool = False) -> _Check:
    what = "True or False" + (" or None" if none else "")

    def check(name: str, value: Any) -> None:
        if value is None and none:
            return
        if not isinstance(value, (bool, np.bool_)):  # (numpy's bool is no bool)
            raise _refuse(name, value, what)
    return check


def _function(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise _refuse(name, value, "a callable or None")


def _path(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, (str, os.PathLike)):
        raise _refuse(name, value, "a path (str or os.PathLike) or None")
    if isinstance(value, str) and not value:
        raise _refuse(name, value, "a non-empty path or None")


#: the longest time an option in ns may name (about 11 days): the controller
#: divides and rounds with them, and a larger one overflows there
MAX_NS = 1e15

#: every option of `seer_env.stpa.Stpa` (its keyword arguments but ``runtime``)
#: and what it takes
OPTIONS: dict[str, _Check] = {
    "rounds": _integer(1),
    "reprobe_rounds": _integer(1),
    "min_visit_ns": _number(0.0, MAX_NS),
    "margin": _number(0.0, 1.0, hi_open=True),
    "prune": _number(1.0, infinite=True),
    "check_every": _integer(1),
    "drift_factor": _number(1.0, lo_open=True, infinite=True),
    "alive_drop": _number(0.0, 1.0),
    "reprobe_gap": _integer(0),
    "max_threads": _integer(1, max_threads, none=True),
    "trace": _flag(),
    "cores": _integer(1, max_threads, none=True),
    "drop": _number(1.0, infinite=True),
    "drop_traced": _number(1.0, infinite=True),
    "tie": _number(0.0),
    "extra_rounds": _integer(0),
    "confirm": _flag(),
    "hysteresis": _number(0.0),
    "tiny_ns": _number(0.0, MAX_NS),
    "recheck_ns": _number(0.0, MAX_NS),
    "confirm_budget": _number(0.0, 1e6),
    "probe_share": _number(0.0, 1.0, lo_open=True, none=True),
    "pool_probe_ns": _number(0.0, MAX_NS),
    "probe_step_ns": _number(0.0, MAX_NS),
    "check_ns": _number(0.0, MAX_NS),
    "save_ns": _number(0.0, MAX_NS),
    "clock": _function,
    "cpu_sampler": _function,
    "proc_sampler": _function,
    "wait_sampler": _function,
    "thread_sampler": _function,
    "fair_share": _flag(),
    "cache": _flag(none=True),
    "cache_path": _path,
}


def check_options(options: Any) -> dict[str, Any]:
    """``options`` (the controller's keyword arguments, a mapping or None) as a
    dict, once each is known and in its range; else a `ConfigError` naming
    the first that is not (an unknown name lists the known ones)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"stpa_options={options!r} must be a mapping of the STPA "
                          "controller's keyword arguments (or None)")
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise ConfigError(f"unknown stpa option(s) {', '.join(map(repr, unknown))}; "
                          f"the options: {', '.join(OPTIONS)}")
    for name, value in options.items():
        OPTIONS[name](name, value)
    return dict(options)


__all__ = ["MAX_NS", "OPTIONS", "check_options"]
