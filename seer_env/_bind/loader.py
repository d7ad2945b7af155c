"""Loading the extension modules: one per model, built by `seer_env._bind.build`.

Every model lives in an extension module of its own (the runtime compiled
together with the model); `load_module` gives a model folder's module
(the one built with the package when it matches the sources, else one built
into `cache_dir`, once per content), `core` the runtime built
without a model (``seer_env._core``: models made at run time, the RNG
seeding, the trace record layout).  `seer_env._bind.native` wraps a module's
model table, `seer_env._bind.runtime` runs it.

The bottom of the bindings (``[tool.importlinter]`` in ``pyproject.toml``):
it imports only `seer_env._bind.build` and [`seer_env.errors`][seer_env.errors].
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import importlib.util
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

from ..errors import BuildError
from . import build as _build

__all__ = ["build_id", "cache_dir", "core", "file_lock", "import_file", "load_module",
           "runtime_module", "safe_name"]


def cache_dir() -> Path:
    """Where built models are kept: ``$SEER_ENV_CACHE``, else ``$XDG_CACHE_HOME/seer_env``
    (``~/.cache/seer_env``), else a folder in the temporary directory."""
    env = os.environ.get("SEER_ENV_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "seer_env"
    try:
        path.mkdir(parents=True, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    return Path(tempfile.gettempdir()) / f"seer_env-{os.getuid()}"


_modules: dict[str, ModuleType] = {}
_modules_lock = threading.Lock()


def import_file(name: str, path: Path) -> ModuleType:
    """Import the extension module at ``path`` under the name ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - bad suffix
        raise BuildError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_id(module: ModuleType) -> str:
    """The source hash a module was built from."""
    return module.ffi.string(module.lib.seer_build_id()).decode()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created, with its folder) while
    the block runs: one process at a time builds into a cache folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def load_module(
    model_dir: Path | None,
    prebuilt: str | None = None,
    *,
    werror: bool = True,
    rebuild: bool = False,
    extra_cflags: Sequence[str] = (),
    log: Callable[[str], None] | None = None,
) -> tuple[ModuleType, str]:
    """The extension module of ``model_dir`` (None: the runtime alone).

    ``prebuilt`` names a module built with the package (``seer_env._core``,
    ``seer_env.envs.<name>._model``); it is used when it was built from the
    sources as they are now.  Otherwise the module is built into
    `cache_dir` (once per content: a changed source gives a new build,
    an unchanged one is reused) and imported under a name of its own.
    ``extra_cflags`` builds a variant (e.g. ``-DSEER_NO_TRACE``).  Returns
    ``(module, where)``: ``"package"``, ``"cache"``, ``"built"`` or ``"loaded"``
    (already imported).  Raises [`BuildError`][seer_env.errors.BuildError] with the
    compiler's output.
    """
    want = _build.source_hash(model_dir, werror, extra_cflags)
    key = f"{model_dir}:{want}"
    with _modules_lock:
        if key in _modules and not rebuild:
            return _modules[key], "loaded"
        if prebuilt and not rebuild:
            try:
                mod = importlib.import_module(prebuilt)
            except ImportError:
                mod = None
                if log is None:
                    warnings.warn(
                        f"seer_env: {prebuilt} is not built in {model_dir or _build.PKG}, so it "
                        "is compiled now (once, into the cache). If you installed seer_env "
                        "with `pip install .` and run from its source folder, that folder "
                        "shadows the installed package: run from elsewhere, or install with "
                        "`pip install -e .`", RuntimeWarning, stacklevel=3)
            if mod is not None and build_id(mod) == want:
                _modules[key] = mod
                return mod, "package"
        try:
            mod, where = _build.load_cached(cache_dir(), model_dir, want, import_file,
                                            werror=werror, extra_cflags=extra_cflags,
                                            rebuild=rebuild, log=log)
        except _build.BuildFailed as exc:
            raise BuildError(
                f"building {model_dir or 'the runtime'} failed: {exc}",
                log=exc.log, command=exc.command,
            ) from None
        _modules[key] = mod
        return mod, where


def safe_name(s: str) -> str:
    """``s`` with every character but letters, digits and ``_`` replaced by ``_``
    (a file or module name; ``"model"`` if nothing is left)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in s) or "model"


_core: ModuleType | None = None


def runtime_module() -> ModuleType:
    """A module carrying the runtime's header (its constants and types): one
    already loaded if any (every model's module is built with the whole
    runtime), else `core` -- which costs hashing the runtime's sources the
    first time, a few milliseconds a threads="auto" run should not pay."""
    with _modules_lock:
        for mod in _modules.values():
            return mod
    return core()


def core() -> ModuleType:
    """``seer_env._core``: the runtime without a model (models made at run time,
    the RNG seeding, the trace record layout)."""
    global _core
    if _core is None:
        _core = load_module(None, "seer_env._core")[0]
    return _core
