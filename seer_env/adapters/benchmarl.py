"""BenchMARL task: any seer_env model as a BenchMARL task, over `SeerTorchEnv`.

BenchMARL (1.5, TorchRL 0.10-0.11) runs its algorithms on a *task*: a
``TaskClass`` that makes a TorchRL env and describes its specs, and a ``Task``
enum naming the tasks of one environment (BenchMARL's "custom task" docs).
Here the shipped envs are members of `SeerTask`, and `task` makes one for any
model, shipped or your own folder:

```python
from benchmarl.algorithms import MappoConfig
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
from seer_env.benchmarl import SeerTask, task

cfg = ExperimentConfig.get_from_yaml()
cfg.max_n_iters, cfg.loggers = 2, []
experiment = Experiment(
    task=SeerTask.HUNT_V0.get_task({"max_cycles": 50}),   # or task("path/to/mymodel", ...)
    algorithm_config=MappoConfig.get_from_yaml(),
    model_config=MlpConfig.get_from_yaml(),
    critic_model_config=MlpConfig.get_from_yaml(),
    seed=0, config=cfg)
experiment.run()
```

The task's config holds the model's configuration and the env's keys
(``threads``, ``max_cycles``, ...), plus ``"env"`` (the model: a name or a
folder; `SeerTask`'s members set it) and ``"max_steps"`` (BenchMARL's
evaluation rollout length; the env's ``max_cycles`` by default, else 200).
BenchMARL makes ``SeerTorchEnv(env, num_envs=..., seed=..., device=...)``
itself: the env is batched in one runtime, not a ``SerialEnv`` of copies.

* **Groups** are the model's (``env.group_map``, `SeerTorchEnv`'s naming);
  BenchMARL's specs are one entry per group, unbatched (as its VMAS task
  gives them): ``(group, "observation")``, ``(group, "action")``, the masked
  groups' ``(group, "action_mask")``, the info values as ``(group, "info")``,
  and ``"state"`` with ``return_state=True`` in the config (a centralised
  critic's input, MAPPO's ``share_param_critic`` aside).
* **Actions.**  BenchMARL's policies draw one categorical (discrete) or one
  Gaussian (continuous) action per agent, so ``flatten_actions`` is on by
  default: a multi-discrete group is one ``Discrete`` of its joint actions,
  its mask the joint mask (`seer_env.faces.flat_actions`).  A task is
  discrete when every group's actions are integers, continuous when every
  group's are a Box; a model that mixes both cannot be one BenchMARL task
  (`ConfigError` when BenchMARL asks for it).

This module imports BenchMARL, TorchRL and torch: without them it raises
[`MissingExtraError`][seer_env.errors.MissingExtraError] (an ``ImportError``).
BenchMARL pins TorchRL below 0.12 and torchvision; the test command runs its
tests in a venv of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MissingExtraError
from ..registry import get as _get_model

if _missing := [m for m in ("torch", "torchrl", "benchmarl") if find_spec(m) is None]:
    raise MissingExtraError(
        f"seer_env.adapters.benchmarl needs torch, TorchRL and BenchMARL; not installed: "
        f"{', '.join(_missing)}.  Install them with: pip install benchmarl (it pins its "
        "TorchRL: a venv of its own is the safe place)")

from benchmarl.environments.common import Task, TaskClass
from torchrl.data import Composite
from torchrl.envs import EnvBase

from .torchrl import SeerTorchEnv

__all__ = ["SeerTask", "SeerTaskClass", "task"]

#: the keys of a task's config that are the task's, not the env's
_TASK_KEYS = ("env", "max_steps")
#: SeerTorchEnv's own keys (not the batched env's)
_TORCH_KEYS = ("categorical_actions", "return_state", "return_info")


class SeerTaskClass(TaskClass):
    """A BenchMARL ``TaskClass`` over `SeerTorchEnv` (see the module
    docstring): ``name`` is the task's name, ``config`` the env's
    configuration with ``"env"`` (the model; ``name`` lower-cased when absent)
    and ``"max_steps"``."""

    def __init__(self, name: str, config: dict[str, Any] | None) -> None:
        super().__init__(name, dict(config or {}))
        self._kinds: set[str] | None = None

    # -- the env ----------------------------------------------------------------

    def _env_args(self) -> tuple[Any, dict[str, Any]]:
        """The model (name or folder) and the env's configuration."""
        cfg = {k: v for k, v in self.config.items() if k not in _TASK_KEYS}
        cfg.setdefault("flatten_actions", True)
        return self.config.get("env", self.name.lower()), cfg

    def _action_kinds(self) -> set[str]:
        """The action kinds of the model's groups as the task hands them out."""
        if self._kinds is None:
            env, cfg = self._env_args()
            model = _get_model(str(env)) if isinstance(env, (str, Path)) else env
            probe = model.vector_env(1, threads=1, **{
                k: v for k, v in cfg.items() if k not in ("threads", *_TORCH_KEYS)})
            try:
                self._kinds = {g.action_kind for g in probe.groups}
            finally:
                probe.close()
        return self._kinds

    def get_env_fun(self, num_envs: int, continuous_actions: bool, seed: int | None,
                    device: Any) -> Callable[[], EnvBase]:
        """A function making ``SeerTorchEnv(model, num_envs, seed=, device=)``
        (BenchMARL calls it in each of its collectors and evaluators)."""
        if continuous_actions and not self.supports_continuous_actions() or \
                not continuous_actions and not self.supports_discrete_actions():
            kinds = sorted(self._action_kinds())
            raise ConfigError(
                f"BenchMARL task {self.name}: asked for "
                f"{'continuous' if continuous_actions else 'discrete'} actions; the model's "
                f"groups have {kinds} actions (a task is continuous when every group's are a "
                "Box, discrete when every group's are integers)")
        env, cfg = self._env_args()
        return lambda: SeerTorchEnv(env, num_envs=num_envs, seed=seed, device=device, **cfg)

    def supports_continuous_actions(self) -> bool:
        """Every group's actions are a Box."""
        return self._action_kinds() == {"box"}

    def supports_discrete_actions(self) -> bool:
        """Every group's actions are integers (discrete, or multi-discrete)."""
        return self._action_kinds() <= {"discrete", "multi_discrete"}

    def max_steps(self, env: EnvBase) -> int:
        """BenchMARL's evaluation rollout length: ``config["max_steps"]``, else
        the env's ``max_cycles``, else 200."""
        given = self.config.get("max_steps")
        if given is not None:
            return int(given)
        venv = getattr(env, "venv", None)  # a SeerTorchEnv, unless BenchMARL wrapped it
        cycles = int(venv.max_cycles) if venv is not None else 0
        return cycles or 200

    def has_render(self, env: EnvBase) -> bool:
        """BenchMARL's video logging: off (`SeerTorchEnv` does not render)."""
        return False

    # -- the specs (unbatched, one entry per group) ------------------------------

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return dict(env.group_map)

    def _group_entries(self, env: EnvBase, keep: str) -> Composite | None:
        spec = env.full_observation_spec_unbatched.clone()
        out = Composite()
        for g in self.group_map(env):
            if keep in spec[g].keys():
                out[g] = Composite({keep: spec[g, keep]}, shape=spec[g].shape)
        return None if out.is_empty() else out

    def observation_spec(self, env: EnvBase) -> Composite:
        out = self._group_entries(env, "observation")
        assert out is not None  # every group has its observation
        return out

    def info_spec(self, env: EnvBase) -> Composite | None:
        return self._group_entries(env, "info")

    def action_mask_spec(self, env: EnvBase) -> Composite | None:
        return self._group_entries(env, "action_mask")

    def state_spec(self, env: EnvBase) -> Composite | None:
        spec = env.full_observation_spec_unbatched
        return Composite({"state": spec["state"].clone()}) if "state" in spec.keys() else None

    def action_spec(self, env: EnvBase) -> Composite:
        return env.full_action_spec_unbatched.clone()

    @staticmethod
    def env_name() -> str:
        return "seer_env"


class SeerTask(Task):
    """The shipped envs as BenchMARL tasks: ``SeerTask.HUNT_V0.get_task(config)``
    (config: the env's configuration; ``{}`` gives its defaults)."""

    AIRCRAFT_V0 = None
    HUNT_V0 = None
    PCS_V0 = None
    PHOLD_V0 = None

    @staticmethod
    def associated_class() -> type[TaskClass]:
        return SeerTaskClass

    def get_task(self, config: dict[str, Any] | None = None) -> TaskClass:
        """The task with ``config`` (None: the env's defaults; BenchMARL's own
        tasks read a YAML file of its package, which has none of ours)."""
        return SeerTaskClass(self.name, {"env": self.name.lower(), **(config or {})})


def task(env: str | Path | Any, name: str | None = None, **config: Any) -> SeerTaskClass:
    """A BenchMARL task for any model: ``env`` is a shipped env's name, a model
    folder or a loaded model; ``config`` the env's configuration (and
    ``max_steps``); ``name`` the task's (default: the model's name)."""
    if isinstance(env, Mapping):
        raise ConfigError(f"task(env={env!r}): env is a model name, a folder or a model")
    if isinstance(env, Path):
        env = str(env)
    model = _get_model(env) if isinstance(env, str) else env
    return SeerTaskClass(name or model.name.upper(), {"env": env, **config})
