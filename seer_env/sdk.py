"""The model SDK: bring your own model to the runtime.

A *model folder* holds a model's C sources (``*.c``, ``*.h``, written against
the one public header, ``seer.h``: :func:`get_include`) and its
*declaration*, an ``__init__.py`` that says what C cannot (the env's name,
rendering, docs)::

    # mymodel/__init__.py
    \"\"\"My model: what it simulates, its agents, observations and rewards.\"\"\"
    from seer_env.sdk import declare

    MODEL = declare(__name__)               # name: the folder's ("mymodel")
    parallel_env = MODEL.parallel_env       # PettingZoo ParallelEnv
    vector_env = MODEL.vector_env           # batched arrays
    agent_vector_env = MODEL.agent_vector_env
    env = MODEL.env                         # PettingZoo AEC

Sizes, configuration parameters (types, defaults, ranges, docs), agent names
and space bounds come from the model's C table; nothing is repeated in Python.
The shipped environments (``seer_env/envs/<name>/``) are folders of exactly
this kind.  From the command line::

    seer-env new mymodel          # a working model folder to start from
    seer-env build mymodel        # compile it (cached by content)
    seer-env check mymodel        # contract checker + determinism matrix
    seer-env run mymodel --steps 100

and from Python::

    import seer_env
    model = seer_env.sdk.load("mymodel")          # builds if needed, registers
    env = model.parallel_env(num_things=8)
    env = seer_env.make("mymodel")                # by its declared name, once loaded
    report = seer_env.sdk.check("mymodel")        # or seer_env.check(...)

A model is compiled together with the runtime into one extension module (so
runtime <-> model calls are direct calls), once per content: editing a source
rebuilds it on the next load; an unchanged one loads from the cache
(``seer_env._runtime.cache_dir()``, ``$SEER_ENV_CACHE``).  A cached build is
used only when it matches the stamp (size, SHA-256) written beside it; a
damaged one is built again, once (``seer_env._build.load_cached``).  A cache
that cannot be written still serves the builds it holds.  A compiler error,
or a build needed where the cache cannot be written, raises
:class:`~seer_env.errors.BuildError`.  A model's name is an ASCII identifier
(:func:`seer_env.registry.check_name`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _build
from ._runtime import NativeModel, Param, load_module
from .errors import BuildError, ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .env import SeerParallelEnv, SeerVectorEnv
    from .gym_vector import AgentVectorEnv


def get_include() -> str:
    """The folder holding ``seer.h``, the one header a model includes."""
    return str(_build.INCLUDE)


class Model:
    """A declared model: its folder and what its declaration says about it.

    Create it with :func:`declare` (in the folder's ``__init__.py``) or get it
    with :func:`load` / :func:`seer_env.registry.get`.  The native part is
    built (or taken from the package or the cache) on first use
    (:attr:`native`).

    Attributes:
        name: the env name (unique in a process), e.g. ``"pcs_v0"``.
        folder: the model folder.
        doc: the declaration's docstring (what the model simulates).
        render: optional ``env -> (H, W, 3) uint8`` frame of instance 0.
        render_fps: frames per second advertised in ``metadata``.
        dict_info_keys: info values put in each agent's ``infos`` dict by the
            ParallelEnv by default (None: all).
        default_seed: optional ``config -> seed`` used by ``reset(seed=None)``
            (None: a fresh random seed).
        parallel_class, vector_class: the env classes (subclasses of the
            generic ones may add model-specific methods).
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
        from .registry import check_name

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
        """The configuration parameters (name -> :class:`~seer_env._runtime.Param`)."""
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
        """A PettingZoo ParallelEnv (keys: :attr:`defaults` plus ``threads``,
        ``executor``, ``render_mode``, ``info_keys``)."""
        from .env import SeerParallelEnv, env_class

        if self._env_class is None:
            self._env_class = env_class(self, self.parallel_class or SeerParallelEnv)
        env: SeerParallelEnv = self._env_class(self, **config)
        return env

    def vector_env(self, num_envs: int, **config: Any) -> SeerVectorEnv:
        """``num_envs`` instances stepped together as arrays (plus ``copy``,
        ``autoreset_mode``)."""
        from .env import SeerVectorEnv

        cls = self.vector_class or SeerVectorEnv
        venv: SeerVectorEnv = cls(self, num_envs, **config)
        return venv

    def agent_vector_env(self, num_envs: int, **config: Any) -> AgentVectorEnv:
        """Every agent of ``num_envs`` instances as one sub-env of a Gymnasium VectorEnv."""
        from . import gym_vector

        return gym_vector.agent_vector_env(self.vector_env, num_envs, **config)

    def aec_env(self, **config: Any) -> Any:
        """A PettingZoo AEC env (PettingZoo's ``parallel_to_aec`` of
        :meth:`parallel_env`, checking each action when it is given)."""
        from .env import aec_env

        return aec_env(self.parallel_env(**config))

    env = aec_env


def _caller_file(module: str) -> Path:
    mod = sys.modules.get(module)
    file = getattr(mod, "__file__", None)
    if not file:
        raise ConfigError(f"declare({module!r}): call it from the model folder's __init__.py "
                          "as declare(__name__)")
    return Path(file).resolve().parent


def declare(module: str, name: str | None = None, **options: Any) -> Model:
    """Declare the model whose folder holds the calling module (its ``__init__.py``)::

        MODEL = declare(__name__, render=my_render)

    ``name`` defaults to the folder's name.  ``options``: the keyword
    arguments of :class:`Model`.  The model is registered under its name
    (``seer_env.make(name)``, PettingZoo's registry as ``seer_env/<name>``);
    two different folders cannot declare one name.
    """
    folder = _caller_file(module)
    doc = options.pop("doc", None) or getattr(sys.modules.get(module), "__doc__", None)
    model = Model(folder, name, module=module, doc=doc, **options)
    from . import registry

    return registry.register(model)


_loaded: dict[Path, Model] = {}
_load_lock = threading.Lock()


def load(path: str | Path, build: bool = True, log: Callable[[str], None] | None = None
         ) -> Model:
    """The model declared in the folder ``path`` (imported once per process).

    With ``build=True`` its extension is compiled now (or taken from the
    cache), so compiler errors surface here as
    :class:`~seer_env.errors.BuildError`.  A folder without an
    ``__init__.py`` is declared with the defaults (its name is the folder's).
    """
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"{path}: no such model folder")
    with _load_lock:
        model = _loaded.get(folder)
        if model is None:
            from . import registry

            known = registry.by_folder(folder)
            if known is not None:
                model = known
            elif (folder / "__init__.py").is_file():
                digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
                modname = f"seer_models.{_ident(folder.name)}_{digest}"
                _ensure_namespace("seer_models")
                spec = importlib.util.spec_from_file_location(
                    modname, folder / "__init__.py", submodule_search_locations=[str(folder)])
                if spec is None or spec.loader is None:  # pragma: no cover
                    raise ConfigError(f"{folder}: cannot import its __init__.py")
                mod = importlib.util.module_from_spec(spec)
                sys.modules[modname] = mod
                try:
                    spec.loader.exec_module(mod)
                except BaseException:
                    sys.modules.pop(modname, None)
                    raise
                model = getattr(mod, "MODEL", None)
                if not isinstance(model, Model):
                    raise ConfigError(
                        f"{folder}/__init__.py must declare the model: "
                        "MODEL = seer_env.sdk.declare(__name__)")
            else:
                model = registry.register(Model(folder))
            _loaded[folder] = model
    if build:
        model.build(log=log)
    return model


def _ident(s: str) -> str:
    out = "".join(c if (c.isascii() and c.isalnum()) or c == "_" else "_" for c in s)
    return out if out and not out[0].isdigit() else f"m_{out}"


def _ensure_namespace(name: str) -> None:
    if name not in sys.modules:
        import types

        pkg = types.ModuleType(name)
        pkg.__path__ = []
        sys.modules[name] = pkg


def build(path: str | Path, rebuild: bool = False, log: Callable[[str], None] | None = None
          ) -> Model:
    """Compile the model folder ``path`` into the cache (``rebuild=True``: even if
    an up-to-date build exists) and return its :class:`Model`."""
    model = load(path, build=False)
    model.build(rebuild=rebuild, log=log)
    return model


TEMPLATES = Path(__file__).resolve().parent / "templates"


def new(name: str, where: str | Path = ".", force: bool = False, python: bool = False) -> Path:
    """Write a working model folder ``where/name`` from the template: the C
    model (every hook present and commented), its declaration, a test and a
    README; with ``python=True`` the model written in Python
    (:mod:`seer_env.pymodel`) instead of C.  It builds, passes
    :func:`seer_env.check` and runs as written.  Returns the folder."""
    from .registry import check_name

    check_name(name, " (it names the folder, the C symbols and the env)")
    if name.startswith("_"):
        raise ConfigError(f"model name {name!r} must be an identifier not starting with '_' "
                          "(it names the folder, the C symbols and the env)")
    folder = Path(where).expanduser() / name
    if folder.exists() and any(folder.iterdir()) and not force:
        raise ConfigError(f"{folder} exists and is not empty (force=True / --force overwrites)")
    folder.mkdir(parents=True, exist_ok=True)
    # Python files are stored as .tmpl: the template folder is no package
    for src in sorted((TEMPLATES / ("py_model" if python else "c_model")).iterdir()):
        if src.name.startswith(".") or src.name == "__pycache__":
            continue
        dest = folder / src.name.replace("__NAME__", name).removesuffix(".tmpl")
        dest.write_text(src.read_text().replace("__NAME__", name))
    return folder


def resolve(model: str | Path | Model) -> Model:
    """A :class:`Model` from a model, a registered name or a folder path."""
    if isinstance(model, Model):
        return model
    from . import registry

    return registry.get(str(model))


def describe_config(model: Model, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The configuration as the model completes it (derived values filled in)."""
    nm = model.native
    buf, _ = nm.describe(dict(config or {}))
    return nm.read_config(buf)
