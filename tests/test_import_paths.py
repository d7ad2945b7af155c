"""Every documented import path keeps working as the package is arranged by
concern: a module that moved into a sub-package leaves its old path behind as
a thin re-export of the same objects, and every public module says what it
exports (``__all__``)."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

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
    "seer_env._runtime": "seer_env._bind.runtime",
    "seer_env._loader": "seer_env._bind.loader",
    "seer_env.gym_vector": "seer_env.faces.gym_vector",
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
    "seer_env.stpa.decision", "seer_env.stpa.monitor", "seer_env.stpa.probe",
    "seer_env.perf.bench", "seer_env.perf.trace", "seer_env.perf.parallelism",
    "seer_env.perf.company", "seer_env.budget",
    "seer_env.errors", "seer_env.sdk", "seer_env.gym_vector", "seer_env.faces.gym_vector",
    "seer_env.check", "seer_env.check.bounds", "seer_env.check.race", "seer_env.faces",
    "seer_env.adapters.torchrl_groups", "seer_env.adapters.rllib_config",
])
def test_a_public_module_says_what_it_exports(name: str) -> None:
    m = importlib.import_module(name)
    assert isinstance(m.__all__, (list, tuple)) and m.__all__
    for export in m.__all__:
        assert hasattr(m, export), (name, export)


def test_the_bindings_old_paths_reach_the_whole_module() -> None:
    """``seer_env._runtime.Runtime`` (the shipped models' examples) and
    ``seer_env._loader.cache_dir`` (the guides) stay where the docs say; any
    other name of the bindings' modules, the ones computed on first use
    included, reads through."""
    from seer_env._bind import loader, runtime
    from seer_env._loader import cache_dir
    from seer_env._runtime import TRACE_DTYPE, Group, Runtime

    assert (Runtime, cache_dir, Group) == (runtime.Runtime, loader.cache_dir, runtime.Group)
    assert TRACE_DTYPE == runtime.trace_dtype()
    import seer_env._runtime as old

    assert old._live_runtimes is runtime._live_runtimes


# -- the library adapters (seer_env/adapters/): the short paths import their classes on
# first use, so that they, like the package, import without torch and Ray

#: short path -> the adapter module, the library it needs, its class
ADAPTERS = {
    "seer_env.torchrl": ("seer_env.adapters.torchrl", "torchrl", "SeerTorchEnv"),
    "seer_env.rllib": ("seer_env.adapters.rllib", "ray", "SeerMultiAgentEnv"),
    "seer_env.benchmarl": ("seer_env.adapters.benchmarl", "benchmarl", "SeerTask"),
}


@pytest.mark.parametrize("old", sorted(ADAPTERS))
def test_an_adapters_short_path_gives_the_adapters_own_objects(old: str) -> None:
    new, library, cls_name = ADAPTERS[old]
    pytest.importorskip(library)
    o, n = importlib.import_module(old), importlib.import_module(new)
    assert list(o.__all__) == list(n.__all__) and cls_name in n.__all__
    for name in n.__all__:
        if name in ("env_creator", "check_nodes"):  # the short path calls the adapter's
            continue
        assert getattr(o, name) is getattr(n, name), (old, name)
    cls = getattr(n, cls_name)
    # a plain module-level class: pickled by reference (RLlib sends env classes to
    # its workers), and a pickle naming the short path loads the same class
    assert (cls.__module__, cls.__qualname__) == (new, cls_name)
    assert pickle.loads(pickle.dumps(cls)) is cls
    assert pickle.loads(f"c{old}\n{cls_name}\n.".encode()) is cls


def test_the_rllib_short_paths_env_creator_makes_the_adapters_env() -> None:
    pytest.importorskip("ray")
    from seer_env import rllib
    from seer_env.adapters import rllib as adapter

    cfg = {"env": "pcs_v0", "width": 3, "height": 3, "threads": 1}
    for creator in (rllib.env_creator, adapter.env_creator):
        env = creator(cfg)
        assert type(env) is adapter.SeerMultiAgentEnv
        env.close()


def test_the_adapters_package_and_short_paths_import_without_torch_or_ray() -> None:
    code = (
        "import sys\n"
        "import seer_env, seer_env.adapters, seer_env.torchrl, seer_env.rllib\n"
        "import seer_env.benchmarl\n"
        "import seer_env.adapters.torchrl_groups, seer_env.adapters.rllib_config\n"
        "from seer_env.rllib import env_creator, group_policies, shared_policy\n"
        "from seer_env.rllib import UntruncatedEpisodesWarning\n"
        "from seer_env.torchrl import group_names\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'tensordict', 'torchrl', 'ray', 'benchmarl'))\n"
        "assert not loaded, loaded\n"
        "assert seer_env.adapters.__all__ == []\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _missing_extra_messages(old: str, new: str, cls_name: str, blocked: str) -> list[str]:
    """In a fresh interpreter with ``blocked`` unimportable: the messages of the
    MissingExtraError (an ImportError) that looking ``cls_name`` up on the
    short path ``old``, then importing the adapter ``new``, raise."""
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from seer_env.errors import MissingExtraError\n"
        f"import {old} as short\n"
        f"for get in (lambda: getattr(short, {cls_name!r}), lambda: __import__({new!r})):\n"
        "    try:\n"
        "        get()\n"
        "    except MissingExtraError as exc:\n"
        "        assert isinstance(exc, ImportError)\n"
        "        print(exc)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.splitlines()


@pytest.mark.parametrize("old,blocked,extra", [
    ("seer_env.torchrl", "torch", "torchrl"), ("seer_env.torchrl", "torchrl", "torchrl"),
    ("seer_env.rllib", "ray", "rllib"),
])
def test_an_adapter_without_its_library_says_which_extra_installs_it(
        old: str, blocked: str, extra: str) -> None:
    new, _, cls_name = ADAPTERS[old]
    out = _missing_extra_messages(old, new, cls_name, blocked)
    assert len(out) == 2 and all(f"pip install 'seer_env[{extra}]'" in line for line in out)
    assert all(blocked in line for line in out)


def test_the_benchmarl_task_without_benchmarl_says_what_to_install() -> None:
    """BenchMARL is no extra of ours (it pins TorchRL < 0.12): the short path
    imports, and a name looked up there, or the adapter, raises
    MissingExtraError naming BenchMARL."""
    out = _missing_extra_messages("seer_env.benchmarl", "seer_env.adapters.benchmarl",
                                  "SeerTask", "benchmarl")
    assert len(out) == 2 and all("not installed: benchmarl" in line for line in out)
