"""Every model a process knows, by name, and :func:`make`.

Shipped models are the folders of ``seer_env/envs`` (found, not listed);
users' models join when their declaration runs (:func:`seer_env.sdk.load`
or importing the folder).  A name belongs to one folder.

Example::

    import seer_env
    env = seer_env.make("phold_v0", num_entities=32)          # ParallelEnv
    aec = seer_env.make("phold_v0", api="aec")                 # AEC env
    venv = seer_env.make("phold_v0", api="vector", num_envs=8) # batched arrays
    gym_venv = seer_env.make("pcs_v0", api="agent_vector", num_envs=4)  # Gymnasium VectorEnv
    mine = seer_env.make("path/to/mymodel", num_things=4)     # a model folder

``import seer_env`` also registers every shipped env in PettingZoo's registry
(PettingZoo >= 1.26 has one) as ``seer_env/<name>``, both ``"parallel"`` and
``"aec"``; a user's model is registered there when it is declared::

    import pettingzoo, seer_env
    env = pettingzoo.make("parallel", "seer_env/pcs_v0", width=4, height=4)
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from ._runtime import NativeModel
    from .sdk import Model

_ENVS_DIR = Path(__file__).resolve().parent / "envs"


def _shipped() -> tuple[str, ...]:
    return tuple(sorted(
        d.name for d in _ENVS_DIR.iterdir()
        if d.is_dir() and (d / "__init__.py").is_file() and any(d.glob("*.c"))
    ))


#: The shipped envs (the model folders of ``seer_env/envs``).
ENVS = _shipped()

_models: dict[str, Model] = {}
_lock = threading.RLock()


#: The rule every model name follows (:func:`check_name`).
NAME_RULE = ("an ASCII identifier: letters a-z and A-Z, digits and '_', not starting with a "
             "digit (it names a Python module and C symbols, which must be ASCII)")


def check_name(name: object, where: str = "") -> str:
    """``name`` if it may name a model, else :class:`ConfigError` stating the
    rule (:data:`NAME_RULE`; ``where``: where the name came from, for the
    message).  The one check of every model name: declared, taken from a
    folder, or given to ``seer-env new``."""
    if not isinstance(name, str) or not (name.isascii() and name.isidentifier()):
        raise ConfigError(f"model name {name!r}{where} must be {NAME_RULE}")
    return name


def register(model: Model) -> Model:
    """Add a declared model (called by :func:`seer_env.sdk.declare`).

    Declaring the same folder again returns the model already registered;
    another folder under a taken name raises :class:`ConfigError`.
    """
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
    _register_pettingzoo_model(model)
    return model


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
    with _lock:
        m = _models.get(name)
    if m is not None:
        return m
    if name in ENVS:
        importlib.import_module(f"seer_env.envs.{name}")
        return _models[name]
    if "/" in name or name.startswith(".") or Path(name).is_dir():
        from .sdk import load

        return load(name, build=False)
    raise ConfigError(f"unknown env {name!r}; available: {available()} (or a model folder's "
                      "path)")


def native_model(name: str) -> NativeModel:
    """The native model of a registered env (``"pcs_v0"``) or of a shipped
    model's C name (``"pcs"``)."""
    with _lock:
        known = name in _models
    if not known and name not in ENVS and f"{name}_v0" in ENVS:
        name = f"{name}_v0"
    return get(name).native


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
            of each of ``num_envs`` instances, see :mod:`seer_env.gym_vector`).
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
