"""Build the package's extensions with seer_env/_bind/build.py (the model SDK's builder).

``seer_env._core`` is the runtime alone; every shipped model folder
(``envs/<name>/`` with C sources) becomes ``seer_env.envs.<name>._model``,
the runtime and that model in one module -- built exactly as ``seer-env build``
builds a user's model.  ``seer_env._fast`` (the dict and batched APIs' per-step
work) is an ordinary CPython extension using NumPy's C API (NumPy >= 2 is a build
requirement; the module targets NumPy 1.24's API and runs on any NumPy >= 1.24).

The source tree shows the layers: ``native/`` (the runtime, ``seer.h``, the C of
``seer_env._fast``) and ``envs/`` (the shipped models) sit beside ``seer_env/``;
``package_dir`` maps them into the package, so a wheel holds them as
``seer_env/native/`` and ``seer_env/envs/`` (the model SDK compiles users' models
against the runtime's sources there), and an editable install reads them in place.
"""

import importlib.util
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_seer_build",
                                               ROOT / "seer_env" / "_bind" / "build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)

MODELS = sorted(d for d in (ROOT / "envs").iterdir()
                if d.is_dir() and any(d.glob("*.c")))

#: Package folders outside ``seer_env/`` (``seer_env._paths`` follows the same map).
PACKAGE_DIR = {"seer_env": "seer_env", "seer_env.native": "native", "seer_env.envs": "envs"}
#: The package's sub-packages (a folder of seer_env/ with an __init__.py), found
#: rather than listed: a new one cannot be left out of the wheel.
SUBPACKAGES = sorted(f"seer_env.{d.name}" for d in (ROOT / "seer_env").iterdir()
                     if (d / "__init__.py").is_file())
PACKAGES = ["seer_env", *SUBPACKAGES, "seer_env.native", "seer_env.envs",
            *(f"seer_env.envs.{d.name}" for d in MODELS)]
# the runtime's sources and the public header ship with the package: the model
# SDK compiles users' models against them; each model folder's C and README ship
# with it (the model is rebuilt from them when its prebuilt module is stale)
PACKAGE_DATA = {
    "seer_env": ["templates/**/*", "py.typed"],
    "seer_env.native": ["runtime/*.c", "runtime/*.h", "include/*.h", "fast/*.c", "fast/*.h"],
    **{f"seer_env.envs.{d.name}": ["*.c", "*.h", "README.md"] for d in MODELS},
}


class BuildSeer(build_ext):
    """Compile each extension with the SDK's builder instead of distutils."""

    def build_extension(self, ext):
        if not getattr(ext, "seer", False):  # a plain CPython extension (seer_env._fast)
            # NumPy's C API headers: imported here, not at the top, so that
            # commands that build nothing (sdist, egg_info) do not need NumPy
            import numpy

            if numpy.get_include() not in ext.include_dirs:
                ext.include_dirs.append(numpy.get_include())
            return super().build_extension(ext)
        model_dir = getattr(ext, "model_dir", None)
        cache = Path(self.build_temp) / "seer-objects"
        try:
            warnings = _build.build_module(ext.name, Path(self.get_ext_fullpath(ext.name)),
                                           model_dir, werror=True, object_cache=cache,
                                           log=lambda m: print(m, flush=True))
        except _build.BuildFailed as exc:
            raise SystemExit(str(exc)) from None
        if warnings:
            print(warnings, flush=True)


def _ext(name, model_dir=None):
    e = Extension(name, sources=[])
    e.model_dir = model_dir
    e.seer = True
    return e


# The dict and batched APIs' per-step work (CPython's and NumPy's C APIs; no cffi,
# no runtime).
FAST = Extension("seer_env._fast", sources=["native/fast/_fast.c", "native/fast/gate.c"],
                 extra_compile_args=["-O2", "-Wall", "-Wextra", "-Werror"])


setup(
    package_dir=PACKAGE_DIR,
    packages=PACKAGES,
    package_data=PACKAGE_DATA,
    ext_modules=[_ext("seer_env._core"), FAST]
    + [_ext(f"seer_env.envs.{d.name}._model", d) for d in MODELS],
    cmdclass={"build_ext": BuildSeer},
)
