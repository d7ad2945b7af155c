"""Every model a process knows, by name, and [`make`][seer_env.registry.make].

Shipped models are the folders of ``envs/`` (``seer_env.envs``) (found, not listed);
users' models join when their declaration runs ([`seer_env.sdk.load`][seer_env.sdk.load]
or importing the folder).  A name belongs to one folder.

Example:

```python
import seer_env
env = seer_env.make("phold_v0", num_entities=32)          # ParallelEnv
aec = seer_env.make("phold_v0", api="aec")                 # AEC env
venv = seer_env.make("phold_v0", api="vector", num_envs=8) # batched arrays
gym_venv = seer_env.make("pcs_v0", api="agent_vector", num_envs=4)  # Gymnasium VectorEnv
mine = seer_env.make("path/to/mymodel", num_agents=4)     # a model folder
```

``import seer_env`` also registers every shipped env in PettingZoo's registry
(PettingZoo >= 1.26 has one) as ``seer_env/<name>``, both ``"parallel"`` and
``"aec"``; a user's model is registered there when it is declared:

```python
import pettingzoo, seer_env
env = pettingzoo.make("parallel", "seer_env/pcs_v0", width=4, height=4)
```
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import _paths, stpa
from ._bind import runtime as _runtime
from ._bind.native import NativeModel
from .errors import ConfigError, ModelError, SeerError
from .model import NAME_RULE as NAME_RULE  # the naming rule lives with Model; kept here too
from .model import Model, _ensure_namespace, _ident
from .model import check_name as check_name

_ENVS_DIR = _paths.ENVS


def _shipped() -> tuple[str, ...]:
    return tuple(sorted(
        d.name for d in _ENVS_DIR.iterdir()
        if d.is_dir() and (d / "__init__.py").is_file() and any(d.glob("*.c"))
    ))


#: The shipped envs (the model folders of ``envs/``, the package ``seer_env.envs``).
ENVS = _shipped()

_models: dict[str, Model] = {}
_lock = threading.RLock()


def register(model: Model) -> Model:
    """Add a declared model (called by [`seer_env.sdk.declare`][seer_env.sdk.declare]).

    Declaring the same folder again returns the model already registered;
    another folder under a taken name raises [`ConfigError`][seer_env.errors.ConfigError].
    """
    if model.name in ENVS and model.folder != (_ENVS_DIR / model.name).resolve():
        # shipped envs register when first imported: without this a model
        # loaded first took the name, and make(name) returned it
        raise ConfigError(
            f"the model in {model.folder} is named {model.name!r}, the name of a shipped "
            "env; rename it (the folder, or name= in its declaration)")
    with _lock:
        old = _models.get(model.name)
        if old is not None:
            if old.folder == model.folder:
                return old
            raise ConfigError(
                f"two models are named {model.name!r}: {old.folder} and {model.folder}; "
                "rename one (the folder, or name= in its declaration)"
            )
        _models[model.name] = model
        # a pickled env of the model finds it again by name, else by folder
        model.reference = functools.partial(_model_ref, model.name, str(model.folder))
    _register_pettingzoo_model(model)
    return model


def _model_ref(name: str, folder: str) -> Model:
    """The model registered as ``name``, else the one declared in ``folder``
    (what an env unpickled in another process is made from)."""
    try:
        return get(name)
    except ConfigError:
        return load(folder, build=False)


def by_folder(folder: Path) -> Model | None:
    """The registered model of ``folder`` (shipped folders are imported)."""
    folder = Path(folder).resolve()
    if folder.parent == _ENVS_DIR and folder.name in ENVS:
        return get(folder.name)
    with _lock:
        for m in _models.values():
            if m.folder == folder:
                return m
    return None


def get(name: str) -> Model:
    """The model registered as ``name``, a shipped env, or the model folder at
    path ``name``."""
    if not isinstance(name, str):
        raise ConfigError(f"env name {name!r} must be a string")
    if not name.strip():  # not the current directory ("." says that)
        raise ConfigError(f"env name {name!r} is empty; available: {available()} (or a "
                          "model folder's path)")
    with _lock:
        m = _models.get(name)
    if m is not None:
        return m
    if name in ENVS:
        importlib.import_module(f"seer_env.envs.{name}")
        return _models[name]
    if "/" in name or name.startswith(".") or Path(name).is_dir():
        return load(name, build=False)
    raise ConfigError(f"unknown env {name!r}; available: {available()} (or a model folder's "
                      "path)")


_loaded: dict[Path, Model] = {}
_load_lock = threading.Lock()


def _import_failure(folder: Path, exc: Exception) -> str:
    """What importing ``folder``'s ``__init__.py`` raised, with the place in
    the model's files (the innermost frame there; a syntax error's own)."""
    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{exc.filename}:{exc.lineno}"
    else:
        for fr in reversed(traceback.extract_tb(exc.__traceback__)):
            if Path(fr.filename).resolve().is_relative_to(folder):
                where = f"{fr.filename}:{fr.lineno}"
                break
    return (f"model folder {folder}: its __init__.py failed to import"
            f"{' at ' + where if where else ''}: {type(exc).__name__}: {exc}")


def load(path: str | Path, build: bool = True, log: Callable[[str], None] | None = None
         ) -> Model:
    """The model declared in the folder ``path`` (imported once per process).

    With ``build=True`` its extension is compiled now (or taken from the
    cache), so compiler errors surface here as
    [`BuildError`][seer_env.errors.BuildError].  A folder without an
    ``__init__.py`` is declared with the defaults (its name is the folder's).
    ([`seer_env.sdk.load`][seer_env.sdk.load] is this function.)
    """
    if isinstance(path, str) and not path.strip():
        raise ConfigError(f"model folder {path!r}: an empty path (\".\" is the current "
                          "directory)")
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        # in a remote worker (a Ray env runner on another node) the path is
        # this machine's: say which machine, and how the folder gets there
        raise ConfigError(
            f"{path}: no such model folder on {socket.gethostname()} (resolved: {folder}); "
            "a process on another machine (a Ray env runner) needs the folder at this path "
            "there too: copy it to each node, or ship it with Ray's runtime_env "
            "(ray.init(runtime_env={'working_dir': ...})) and give its path relative to that")
    with _load_lock:
        model = _loaded.get(folder)
        if model is None:
            known = by_folder(folder)
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
                except BaseException as exc:
                    sys.modules.pop(modname, None)
                    if isinstance(exc, Exception) and not isinstance(exc, SeerError):
                        # the model's own code failed (a syntax error, a name not
                        # defined): one line naming where, the traceback as cause
                        raise ModelError(_import_failure(folder, exc)) from exc
                    raise
                model = getattr(mod, "MODEL", None)
                if not isinstance(model, Model):
                    raise ConfigError(
                        f"{folder}/__init__.py must declare the model: "
                        "MODEL = seer_env.sdk.declare(__name__)")
            else:
                model = register(Model(folder))
            _loaded[folder] = model
    if build:
        model.build(log=log)
    return model



def native_model(name: str) -> NativeModel:
    """The native model of a registered env (``"pcs_v0"``) or of a shipped
    model's C name (``"pcs"``)."""
    with _lock:
        known = name in _models
    if not known and name not in ENVS and f"{name}_v0" in ENVS:
        name = f"{name}_v0"
    return get(name).native


class Runtime(_runtime.Runtime):
    """The runtime (the bindings' `Runtime`) of a native model or of a registered
    model's name (``"phold_v0"``, or a shipped model's C name such as ``"pcs"``),
    with an [`seer_env.stpa.Stpa`][seer_env.stpa.Stpa] controller attached when it asks for one
    (``threads="auto"`` with the parallel executor):

    ```python
    rt = Runtime("pcs", {"classic": True}, 1, "optimistic", 2)
    ```

    ``stpa_options``: the controller's keyword arguments, checked before the
    runtime is made (`seer_env.stpa.check_options`: a `ConfigError` names a
    bad one), whether or not a controller is attached; the other arguments are
    the bindings' (`seer_env._bind.runtime.Runtime`).
    """

    def __init__(self, model: NativeModel | str, config: Mapping[str, Any] | None = None,
                 num_instances: int = 1, executor: str = "parallel",
                 threads: int | str = "auto", max_cycles: int | None = 0,
                 stpa_options: Mapping[str, Any] | None = None, **options: Any) -> None:
        # checked before the runtime is made: a bad option costs nothing to undo
        checked = stpa.check_options(stpa_options)
        if isinstance(model, str):
            model = native_model(model)
        super().__init__(model, config, num_instances, executor, threads, max_cycles,
                         **options)
        stpa.attach(self, **checked)


def memory_estimate(model: NativeModel | str, config: Mapping[str, Any] | None = None,
                    num_instances: int = 1, executor: str = "serial", check: int = 0,
                    threads: int | str = 1) -> dict[str, int]:
    """`seer_env._bind.runtime.memory_estimate` of a native model or of a
    registered model's name:

    ```python
    parts = memory_estimate("aircraft_v0", {"num_uavs": 1 << 20}, 4)
    print(sum(parts.values()) / 2**30, max(parts, key=parts.get))
    ```
    """
    if isinstance(model, str):
        model = native_model(model)
    return _runtime.memory_estimate(model, config, num_instances, executor, check, threads)


def available() -> list[str]:
    """The shipped envs and every model declared in this process."""
    with _lock:
        return sorted(set(ENVS) | set(_models))


def env_module(name: str) -> Model:
    """The model of ``name`` (it has ``parallel_env``, ``vector_env``,
    ``agent_vector_env`` and ``env``, like an env module)."""
    return get(name)


APIS = ("parallel", "aec", "vector", "agent_vector")


def make(name: str, api: str = "parallel", num_envs: int = 1, **config: Any) -> Any:
    """Create an env by name (or model folder path).

    Args:
        name: a shipped env (``"phold_v0"``, ``"pcs_v0"``, ``"aircraft_v0"``), a
            declared model's name, or the path of a model folder.
        api: ``"parallel"`` (PettingZoo ParallelEnv), ``"aec"`` (PettingZoo AEC),
            ``"vector"`` (batched arrays over ``num_envs`` instances) or
            ``"agent_vector"`` (a Gymnasium ``VectorEnv`` with one sub-env per agent
            of each of ``num_envs`` instances, see
            [`seer_env.gym_vector`][seer_env.faces.gym_vector]).
        **config: the env's config (plus ``threads``, ``executor``, ``render_mode``;
            ``copy`` and ``autoreset_mode`` for the vector APIs).
    """
    if api not in APIS:
        raise ConfigError(f"api={api!r} must be one of {list(APIS)}")
    m = get(name)
    if api == "parallel":
        return m.parallel_env(**config)
    if api == "aec":
        return m.aec_env(**config)
    if api == "vector":
        return m.vector_env(num_envs, **config)
    return m.agent_vector_env(num_envs, **config)


#: Namespace of our ids in PettingZoo's registry.
PETTINGZOO_NAMESPACE = "seer_env"


def _pettingzoo_register() -> Any:
    try:
        import pettingzoo
    except ImportError:  # pragma: no cover - pettingzoo is a dependency
        return None
    return getattr(pettingzoo, "register", None)  # PettingZoo < 1.26: no registry


def _pz_id(name: str) -> str:
    return f"{PETTINGZOO_NAMESPACE}/{name}"


def _register_pettingzoo_model(model: Model) -> None:
    register_fn = _pettingzoo_register()
    if register_fn is None:
        return
    import pettingzoo

    env_id = _pz_id(model.name)
    for kind, fn in (("parallel", model.parallel_env), ("aec", model.aec_env)):
        registry = getattr(pettingzoo, f"{kind}_registry", {})
        if env_id.replace("_v", "-v") in registry and model.name in ENVS:
            continue  # the lazy entry point of register_pettingzoo()
        register_fn(kind, env_id, entry_point=fn)


def register_pettingzoo() -> list[str]:
    """Register the shipped envs in PettingZoo's registry (``pettingzoo.make``).

    Each shipped env is registered as ``seer_env/<name>`` (PettingZoo
    normalizes ``pcs_v0`` to ``pcs-v0``) in the ``"parallel"`` and ``"aec"``
    registries, with a lazy ``"module:function"`` entry point.  Called by
    ``import seer_env``; harmless to call again.  Returns the ids registered
    (empty if PettingZoo has no registry).
    """
    register_fn = _pettingzoo_register()
    if register_fn is None:
        return []
    import pettingzoo

    ids = []
    for name in ENVS:
        env_id = _pz_id(name)
        for kind, fn in (("parallel", "parallel_env"), ("aec", "env")):
            registry = getattr(pettingzoo, f"{kind}_registry", {})
            if env_id.replace("_v", "-v") in registry:
                continue
            register_fn(kind, env_id, entry_point=f"seer_env.envs.{name}:{fn}")
        ids.append(env_id)
    return ids
