"""Only the bindings touch the cffi extensions.

The import layers (``[tool.importlinter]`` in ``pyproject.toml``, checked by
``lint-imports``) say which module may import which; they cannot say that a
module above the bindings leaves the cffi objects alone, since those arrive
as attributes (``native.ffi``, ``mod.lib``), not imports.  This test says it:
every module under ``seer_env/`` except the bindings (:data:`BINDINGS`) and
the builder (:data:`BUILDER`) is parsed, and it fails on

* an attribute named ``ffi`` or ``lib`` (``nat.ffi``, ``rt.lib``,
  ``ctx.lib.seer_now(...)``; or ``_ffi``/``_lib``, where one is kept), read,
  written or deleted, also through ``getattr``/``setattr``/``hasattr``/
  ``delattr`` with the name as a string;
* a variable or parameter named ``ffi`` or ``_ffi`` (cffi's name for its
  FFI object: ``def sizes_dtype(ffi)``, ``ffi = m.ffi``);
* importing the names ``ffi`` or ``lib`` (``from seer_env._core import ffi``);
* importing cffi itself (``cffi``, ``_cffi_backend``) or one of the cffi
  extension modules (``seer_env._core``, a model's ``_model``).

Plain variables that happen to be called ``lib`` (the race pass's path of
libtsan) are not cffi objects and are not refused: the rule is about the
attributes cffi modules carry, cffi's FFI object, and importing them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "seer_env"

#: The modules that call the runtime through ffi/lib (docs/architecture.md, "bindings").
BINDINGS = frozenset({"seer_env/_bind/loader.py", "seer_env/_bind/native.py",
                      "seer_env/_bind/runtime.py", "seer_env/_bind/pytable.py",
                      "seer_env/_bind/records.py"})
#: The builder: it makes the cffi modules (cffi's ``FFI`` builder) and loads none.
BUILDER = frozenset({"seer_env/_bind/build.py"})

CFFI_NAMES = frozenset({"ffi", "lib"})
#: Attribute names that hold them (``self._lib = lib`` keeps a module's lib).
CFFI_ATTRS = CFFI_NAMES | {"_ffi", "_lib"}
CFFI_MODULES = frozenset({"cffi", "_cffi_backend"})
#: The cffi extension modules: seer_env._core and each model folder's _model.
EXTENSIONS = frozenset({"_core", "_model"})


def _is_extension(dotted: str) -> bool:
    parts = dotted.split(".")
    return parts[0] in CFFI_MODULES or parts[-1] in EXTENSIONS


def cffi_uses(source: str, filename: str = "<source>") -> list[str]:
    """``line: what`` for every use of a cffi module's objects in ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in CFFI_ATTRS:
            found.append(f"{line}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in ("ffi", "_ffi"):
            found.append(f"{line}: {node.id}")
        elif isinstance(node, ast.arg) and node.arg in ("ffi", "_ffi"):
            found.append(f"{line}: parameter ffi")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in CFFI_ATTRS):
            found.append(f"{line}: {node.func.id}(..., {node.args[1].value!r})")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if _is_extension(a.name) or a.name.split(".")[-1] in CFFI_NAMES:
                    found.append(f"{line}: import {a.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module and _is_extension(module):
                found.append(f"{line}: from {'.' * node.level}{module} import ...")
            for a in node.names:
                if a.name in CFFI_NAMES or a.name in EXTENSIONS:
                    found.append(f"{line}: from {'.' * node.level}{module} import {a.name}")
    return found


def _modules() -> list[Path]:
    """The package's modules: ``seer_env/`` and the shipped models' ``envs/``
    (the package ``seer_env.envs``, kept beside ``seer_env/`` in the tree)."""
    return sorted(p for d in (PKG, ROOT / "envs") for p in d.rglob("*.py")
                  if "__pycache__" not in p.parts)


def test_the_exempt_modules_exist() -> None:
    for rel in BINDINGS | BUILDER:
        assert (ROOT / rel).is_file(), rel


def test_only_the_bindings_touch_ffi_and_lib() -> None:
    checked = 0
    bad: dict[str, list[str]] = {}
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        if rel in BINDINGS or rel in BUILDER:
            continue
        checked += 1
        uses = cffi_uses(path.read_text(), rel)
        if uses:
            bad[rel] = uses
    assert checked > 20
    assert bad == {}, (
        "these modules use cffi objects (ffi/lib) directly; give the bindings "
        f"({sorted(BINDINGS)}) a function for what they need and call it: {bad}")


@pytest.mark.parametrize("code", [
    # what seer_env/check_bounds.py did before the bindings gave it with_hooks
    "ffi, lib = nat.ffi, nat.lib\ntable = ffi.new('seer_model *', nat.table[0])",
    "inst = int(self._lib.seer_instance(ctx))",
    # check_race's child and pymodel's accessors
    "event_kind = int(mod.lib.SEER_TRACE_EVENT)",
    "def now(ctx):\n    return float(ctx.lib.seer_now(ctx.ptr))",
    "p.ffi = None",
    "def sizes_dtype(ffi):\n    return ffi.typeof('seer_sizes')",
    "ffi = fetch()\nffi.buffer(p, 4)",
    "del m.lib",
    "f = getattr(module, 'ffi')",
    "hasattr(m, 'lib')",
    "from seer_env._core import ffi, lib",
    "from .._core import lib as L",
    "from . import _core",
    "import seer_env._core",
    "from seer_env.envs.phold_v0 import _model",
    "import seer_env.envs.phold_v0._model as m",
    "import cffi",
    "from cffi import FFI",
    "import _cffi_backend",
])
def test_the_rule_catches_each_way_of_reaching_a_cffi_module(code: str) -> None:
    assert cffi_uses(code), code


@pytest.mark.parametrize("code", [
    "lib = tsan_runtime()\nif lib is None: pass",  # a path, named lib
    "def run(job, lib):\n    return lib + ':'",
    "from . import _runtime\nrt = _runtime.Runtime(native)",
    "libs = m.library\nx = m.ffi_count",
    "from ._native import HandlerContext",
])
def test_the_rule_leaves_other_code_alone(code: str) -> None:
    assert cffi_uses(code) == [], code


def _layers() -> list[str]:
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return next(c["layers"] for c in cfg["contracts"] if c["type"] == "layers")


def test_the_shipped_models_import_only_the_layers_below_theirs() -> None:
    """import-linter reads the package from ``seer_env/`` on disk and cannot see
    ``seer_env.envs`` (it lives in ``envs/``, mapped in by the build), so the
    envs' place in the layers is checked here: a model folder's modules import
    the SDK and what lies below it, never the tools above it nor the package's
    root (``seer_env/__init__.py``)."""
    layers = _layers()
    assert "envs" not in layers  # checked here, not by import-linter
    above = {m.strip() for layer in layers[:layers.index("sdk | pymodel")]
             for m in layer.replace(":", "|").split("|")}
    assert {"cli", "check", "rllib", "check_bounds"} <= above
    bad = []
    files = sorted((ROOT / "envs").rglob("*.py"))
    assert len(files) >= 4
    for path in files:
        depth = len(path.relative_to(ROOT / "envs").parts)  # envs/x/__init__.py: 2
        pkg = ["seer_env", "envs", *path.relative_to(ROOT / "envs").parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg[:len(pkg) - node.level + 1] if node.level else []
                mod = ".".join([*base, node.module] if node.module else base)
                names = [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts == ["seer_env"] or (parts[0] == "seer_env" and len(parts) > 1
                                             and parts[1] in above):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
        assert depth >= 1
    assert bad == [], bad
