"""Every documented import path keeps working as the package is arranged by
concern: a module that moved into a sub-package leaves its old path behind as
a thin re-export of the same objects, and every public module says what it
exports (``__all__``)."""

from __future__ import annotations

import importlib

import pytest

#: old path -> the module it re-exports
MOVED = {
    "seer_env.stpa_cost": "seer_env.stpa.cost",
    "seer_env.bench": "seer_env.perf.bench",
    "seer_env.trace": "seer_env.perf.trace",
    "seer_env.parallelism": "seer_env.perf.parallelism",
    "seer_env.check_bounds": "seer_env.check.bounds",
    "seer_env.check_race": "seer_env.check.race",
    "seer_env.env": "seer_env.faces",
}


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_an_old_path_re_exports_its_module_whole(old: str, new: str) -> None:
    o, n = importlib.import_module(old), importlib.import_module(new)
    assert list(o.__all__) == list(n.__all__) and len(n.__all__) > 2
    for name in n.__all__:
        assert getattr(o, name) is getattr(n, name), (old, name)


def test_the_documented_paths_import() -> None:
    """The paths the README, the docs and the docstrings use."""
    from seer_env.env import EnvSnapshot, SeerAECEnv, SeerParallelEnv, SeerVectorEnv  # noqa: F401
    from seer_env.perf.bench import bench_stpa
    from seer_env.stpa import DecisionCache, FixedChoice, Stpa, attach, describe, select
    from seer_env.stpa.cache import DecisionCache as home_cache
    from seer_env.stpa.controller import Stpa as home_stpa
    from seer_env.stpa.cost import select as home_select

    assert (DecisionCache, Stpa, select) == (home_cache, home_stpa, home_select)
    assert callable(bench_stpa) and callable(attach) and callable(describe)
    assert FixedChoice.settled is True
    import seer_env
    from seer_env.check import CheckReport, JobContext, Pass, check
    from seer_env.check.report import CheckReport as home_report
    from seer_env.check.runner import check as home_check

    assert (check, CheckReport) == (home_check, home_report) and seer_env.check is check
    assert callable(Pass) and callable(JobContext)


@pytest.mark.parametrize("name", [
    "seer_env.stpa", "seer_env.stpa.controller", "seer_env.stpa.cache", "seer_env.stpa.cost",
    "seer_env.perf.bench", "seer_env.perf.trace", "seer_env.perf.parallelism",
    "seer_env.perf.company",
    "seer_env.errors", "seer_env.sdk", "seer_env.gym_vector",
    "seer_env.check", "seer_env.check.bounds", "seer_env.check.race", "seer_env.faces",
])
def test_a_public_module_says_what_it_exports(name: str) -> None:
    m = importlib.import_module(name)
    assert isinstance(m.__all__, (list, tuple)) and m.__all__
    for export in m.__all__:
        assert hasattr(m, export), (name, export)
