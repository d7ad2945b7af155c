"""The model SDK: bring your own model to the runtime.

A *model folder* holds a model's C sources (``*.c``, ``*.h``, written against
the one public header, ``seer.h``: [`get_include`][seer_env.sdk.get_include]) and its
*declaration*, an ``__init__.py`` that says what C cannot (the env's name,
rendering, docs):

```text
# mymodel/__init__.py
\"\"\"My model: what it simulates, its agents, observations and rewards.\"\"\"
from seer_env.sdk import declare

MODEL = declare(__name__)               # name: the folder's ("mymodel")
parallel_env = MODEL.parallel_env       # PettingZoo ParallelEnv
vector_env = MODEL.vector_env           # batched arrays
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env                         # PettingZoo AEC
```

Sizes, configuration parameters (types, defaults, ranges, docs), agent names
and space bounds come from the model's C table; nothing is repeated in Python.
The shipped environments (``envs/<name>/``) are folders of exactly
this kind.  From the command line:

```bash
seer-env new mymodel          # a working model folder to start from
seer-env new mymodel --groups # the same with two agent groups and masks
seer-env build mymodel        # compile it (cached by content)
seer-env check mymodel        # contract checker + determinism matrix
seer-env run mymodel --steps 100
```

and from Python:

```python
import seer_env
model = seer_env.sdk.load("mymodel")          # builds if needed, registers
env = model.parallel_env(num_agents=8)
env = seer_env.make("mymodel")                # by its declared name, once loaded
report = seer_env.check(model, {"num_agents": 6}, progress=False)   # seer-env check
```

A model is compiled together with the runtime into one extension module (so
runtime <-> model calls are direct calls), once per content: editing a source
rebuilds it on the next load; an unchanged one loads from the cache
(``seer_env._loader.cache_dir()``, ``$SEER_ENV_CACHE``).  A cached build is
used only when it matches the stamp (size, SHA-256) written beside it; a
damaged one is built again, once (``seer_env._bind.build.load_cached``).  A cache
that cannot be written still serves the builds it holds.  A compiler error,
or a build needed where the cache cannot be written, raises
[`BuildError`][seer_env.errors.BuildError].  A model's name is an ASCII identifier
(`seer_env.registry.check_name`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import registry
from .errors import ConfigError
from .model import (
    Model,
    _caller_file,
    check_name,
    describe_config,
    get_include,
)
from .registry import load


def declare(module: str, name: str | None = None, **options: Any) -> Model:
    """Declare the model whose folder holds the calling module (its ``__init__.py``):

    ```python
    MODEL = declare(__name__, render=my_render)
    ```

    ``name`` defaults to the folder's name.  ``options``: the keyword
    arguments of [`Model`][seer_env.sdk.Model].  The model is registered under its name
    (``seer_env.make(name)``, PettingZoo's registry as ``seer_env/<name>``);
    two different folders cannot declare one name.
    """
    folder = _caller_file(module)
    doc = options.pop("doc", None) or getattr(sys.modules.get(module), "__doc__", None)
    model = Model(folder, name, module=module, doc=doc, **options)
    return registry.register(model)


def build(path: str | Path, rebuild: bool = False, log: Callable[[str], None] | None = None
          ) -> Model:
    """Compile the model folder ``path`` into the cache (``rebuild=True``: even if
    an up-to-date build exists) and return its [`Model`][seer_env.sdk.Model]."""
    model = load(path, build=False)
    model.build(rebuild=rebuild, log=log)
    return model


TEMPLATES = Path(__file__).resolve().parent / "templates"


def new(name: str, where: str | Path = ".", force: bool = False, python: bool = False,
        groups: bool = False) -> Path:
    """Write a working model folder ``where/name`` from the template: the C
    model (every hook present and commented, an action mask included), its
    declaration, a test and a README; with ``python=True`` the model written
    in Python ([`seer_env.pymodel`][seer_env.pymodel]) instead of C; with ``groups=True`` a C
    model with two agent groups (scouts with Box actions, workers with
    multi-discrete actions and action masks).  It builds, passes
    [`seer_env.check`][seer_env.check] and runs as written.  Returns the folder.
    ``groups=True`` with ``python=True`` raises [`ConfigError`][seer_env.errors.ConfigError] (the
    templates hold no Python model with groups: write the C one, or a Python
    model and declare its groups as the Python model page shows)."""
    if groups and python:
        raise ConfigError("groups=True (--groups) writes the C template with groups; there is "
                          "no Python template with groups (Python models have them: the "
                          "Python model page's 'Agent groups, action masks and multi-discrete "
                          "actions'); leave out python=True (--python) or groups=True "
                          "(--groups)")
    check_name(name, " (it names the folder, the C symbols and the env)")
    if name.startswith("_"):
        raise ConfigError(f"model name {name!r} must be an identifier not starting with '_' "
                          "(it names the folder, the C symbols and the env)")
    if name in registry.ENVS:
        raise ConfigError(f"model name {name!r} is a shipped env's; choose another")
    folder = Path(where).expanduser() / name
    if folder.exists() and any(folder.iterdir()) and not force:
        raise ConfigError(f"{folder} exists and is not empty (force=True / --force overwrites)")
    folder.mkdir(parents=True, exist_ok=True)
    # Python files are stored as .tmpl: the template folder is no package
    kind = "py_model" if python else "c_groups" if groups else "c_model"
    for src in sorted((TEMPLATES / kind).iterdir()):
        if src.name.startswith(".") or src.name == "__pycache__":
            continue
        dest = folder / src.name.replace("__NAME__", name).removesuffix(".tmpl")
        dest.write_text(src.read_text().replace("__NAME__", name))
    return folder


def resolve(model: str | Path | Model) -> Model:
    """A [`Model`][seer_env.sdk.Model] from a model, a registered name or a folder path."""
    if isinstance(model, Model):
        return model
    return registry.get(str(model))


__all__ = [
    "Model",
    "TEMPLATES",
    "build",
    "declare",
    "describe_config",
    "get_include",
    "load",
    "new",
    "resolve",
]
