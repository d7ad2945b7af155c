"""Model declarations: [`Model`][seer_env.sdk.Model], what a model folder's declaration says.

The layer between the env classes (`seer_env.env`) and the registry
(`seer_env.registry`): a `Model` knows its folder, builds its
native part (`seer_env._bind.runtime`) and makes its envs; registering it by
name (`seer_env.sdk.declare`, `seer_env.sdk.load`) is the
registry's job.  [`seer_env.sdk`][seer_env.sdk] re-exports everything here.
"""

from __future__ import annotations

import inspect
import keyword
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import faces as _env
from ._bind import build as _build
from ._bind.loader import load_module
from ._bind.native import NativeModel, Param
from .errors import BuildError, ConfigError
from .faces import gym_vector

if TYPE_CHECKING:  # pragma: no cover
    from .faces import SeerParallelEnv, SeerVectorEnv
    from .faces.gym_vector import AgentVectorEnv


#: The rule every model name follows (`check_name`).
NAME_RULE = ("an ASCII identifier: letters a-z and A-Z, digits and '_', not starting with a "
             "digit (it names a Python module and C symbols, which must be ASCII)")


def check_name(name: object, where: str = "") -> str:
    """``name`` if it may name a model, else `ConfigError` stating the
    rule (`NAME_RULE`; ``where``: where the name came from, for the
    message).  The one check of every model name: declared, taken from a
    folder, or given to ``seer-env new``."""
    if not isinstance(name, str) or not (name.isascii() and name.isidentifier()):
        raise ConfigError(f"model name {name!r}{where} must be {NAME_RULE}")
    if keyword.iskeyword(name):
        raise ConfigError(f"model name {name!r}{where} is a Python keyword: no module can "
                          "be imported under it")
    return name



def get_include() -> str:
    """The folder holding ``seer.h``, the one header a model includes."""
    return str(_build.INCLUDE)


class Model:
    """A declared model: its folder and what its declaration says about it.

    Create it with [`seer_env.sdk.declare`][seer_env.sdk.declare] (in the folder's ``__init__.py``)
    or get it with `seer_env.sdk.load` / `seer_env.registry.get`.  The native part is
    built (or taken from the package or the cache) on first use
    ([`native`][seer_env.sdk.Model.native]).

    Attributes:
        name: the env name (unique in a process), e.g. ``"pcs_v0"``.
        folder: the model folder.
        doc: the declaration's docstring (what the model simulates).
        render: optional ``env -> (H, W, 3) uint8`` frame of instance 0.
        render_fps: frames per second advertised in ``metadata``.
        dict_info_keys: info values put in each agent's ``infos`` dict by the
            ParallelEnv by default (None: all).
        default_seed: optional ``config -> seed`` used by an env's first
            ``reset(seed=None)`` (None: a fresh random seed); later ones go on
            with the env's seed sequence.
        parallel_class: the ParallelEnv class (a subclass of the generic
            one may add model-specific methods).
        vector_class: the batched env class (the same).
    """

    def __init__(
        self,
        folder: str | Path,
        name: str | None = None,
        *,
        module: str | None = None,
        doc: str | None = None,
        render: Callable[[Any], Any] | None = None,
        render_fps: int = 10,
        dict_info_keys: tuple[str, ...] | None = None,
        default_seed: Callable[[dict[str, Any]], int | None] | None = None,
        parallel_class: type | None = None,
        vector_class: type | None = None,
        warnings_as_errors: bool = False,
    ) -> None:
        self.folder = Path(folder).resolve()
        where = "" if name else (f" (the name of the folder {self.folder}: rename it, or "
                                 "give name= in its declaration)")
        self.name = check_name(name or self.folder.name, where)
        self.module = module
        self.doc = inspect.cleandoc(doc) if doc else None
        self.render = render
        self.render_fps = int(render_fps)
        self.dict_info_keys = None if dict_info_keys is None else tuple(dict_info_keys)
        self.default_seed = default_seed
        self.parallel_class = parallel_class
        self.vector_class = vector_class
        self.warnings_as_errors = bool(warnings_as_errors)
        self._native: NativeModel | None = None
        self._env_class: type | None = None
        self._lock = threading.Lock()
        self.build_log = ""
        #: how a pickled env of this model finds it again in another process: a
        #: picklable callable returning the model (set by the registry when the
        #: model is registered; None: the env pickles a fresh ``Model(folder, name)``)
        self.reference: Callable[[], Model] | None = None

    def __repr__(self) -> str:
        return f"<seer model {self.name!r} from {self.folder}>"

    # -- the native part -----------------------------------------------------------

    @property
    def native(self) -> NativeModel:
        """The model's table in its extension module (built on first use)."""
        if self._native is None:
            with self._lock:
                if self._native is None:
                    self._native = self._load(rebuild=False)
        return self._native

    def build(self, rebuild: bool = False, log: Callable[[str], None] | None = None) -> str:
        """Compile (or re-use) the model's extension; returns where it came
        from: ``"package"`` (built with seer_env), ``"cache"`` (an up-to-date
        earlier build), ``"built"`` (compiled now) or ``"loaded"`` (already
        imported by this process, sources unchanged)."""
        with self._lock:
            self._native = self._load(rebuild=rebuild, log=log)
            return self._where

    def _load(self, rebuild: bool, log: Callable[[str], None] | None = None) -> NativeModel:
        if not _build.model_sources(self.folder):
            raise BuildError(f"{self.folder}: no C sources (*.c) in the model folder")
        lines: list[str] = []

        def keep(msg: str) -> None:
            lines.append(msg)
            if log:
                log(msg)

        prebuilt = f"{self.module}._model" if self.module else None
        mod, self._where = load_module(self.folder, prebuilt, werror=self.warnings_as_errors,
                                       rebuild=rebuild, log=keep)
        self.build_log = "\n".join(lines)
        return NativeModel(mod, str(self.folder))

    @property
    def params(self) -> dict[str, Param]:
        """The configuration parameters (name -> `Param`)."""
        return self.native.params

    @property
    def defaults(self) -> dict[str, Any]:
        """Every configuration key with its default (None: derived by the model)."""
        d = self.native.defaults
        d["max_cycles"] = self.native.max_cycles
        return d

    def config_help(self) -> str:
        """One line per configuration key: default, accepted values, doc."""
        rows = []
        for p in self.params.values():
            rows.append(f"{p.name} = {p.default!r}  ({p.describe_range()})  {p.doc}")
        rows.append(f"max_cycles = {self.native.max_cycles}  (steps before truncation, 0: never)")
        return "\n".join(rows)

    # -- the envs ------------------------------------------------------------------

    def parallel_env(self, **config: Any) -> SeerParallelEnv:
        """A PettingZoo ParallelEnv (keys: `defaults` plus ``threads``,
        ``executor``, ``render_mode``, ``info_keys``)."""
        if self._env_class is None:
            self._env_class = _env.env_class(self, self.parallel_class or _env.SeerParallelEnv)
        par: SeerParallelEnv = self._env_class(self, **config)
        return par

    def vector_env(self, num_envs: int, **config: Any) -> SeerVectorEnv:
        """``num_envs`` instances stepped together as arrays (plus ``copy``,
        ``autoreset_mode``)."""
        cls = self.vector_class or _env.SeerVectorEnv
        venv: SeerVectorEnv = cls(self, num_envs, **config)
        return venv

    def agent_vector_env(self, num_envs: int, **config: Any) -> AgentVectorEnv:
        """Every agent of ``num_envs`` instances as one sub-env of a Gymnasium VectorEnv."""
        return gym_vector.agent_vector_env(self.vector_env, num_envs, **config)

    def aec_env(self, **config: Any) -> Any:
        """A PettingZoo AEC env (PettingZoo's ``parallel_to_aec`` of
        `parallel_env`, checking each action when it is given)."""
        return _env.aec_env(self.parallel_env(**config))

    env = aec_env


def _caller_file(module: str) -> Path:
    mod = sys.modules.get(module)
    file = getattr(mod, "__file__", None)
    if not file:
        raise ConfigError(f"declare({module!r}): call it from the model folder's __init__.py "
                          "as declare(__name__)")
    return Path(file).resolve().parent


def _ident(s: str) -> str:
    out = "".join(c if (c.isascii() and c.isalnum()) or c == "_" else "_" for c in s)
    return out if out and not out[0].isdigit() else f"m_{out}"


def _ensure_namespace(name: str) -> None:
    if name not in sys.modules:
        import types

        pkg = types.ModuleType(name)
        pkg.__path__ = []
        sys.modules[name] = pkg


def describe_config(model: Model, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The configuration as the model completes it (derived values filled in)."""
    nm = model.native
    buf, _ = nm.describe(dict(config or {}))
    return nm.read_config(buf)
