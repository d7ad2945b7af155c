"""Where the package's own files are.  Imports only the standard library, so
build scripts can ask for the header folder without the runtime's modules.

The source tree keeps the C apart from the Python, as its layers are drawn:
``native/`` (the runtime, its public header, ``seer_env._fast``'s C) and
``envs/`` (one folder per shipped model) sit beside ``seer_env/``.  The build
maps them into the package (``setup.py``: ``package_dir``), so an installed
wheel holds them as ``seer_env/native/`` and ``seer_env/envs/``; an editable
install and ``setup.py`` itself read them where they are.
"""

from __future__ import annotations

from pathlib import Path

#: The installed package's folder.
PKG = Path(__file__).resolve().parent


def _mapped(name: str) -> Path:
    """``PKG/name`` in an installed wheel, else the source tree's ``name/``."""
    inside = PKG / name
    return inside if inside.is_dir() else PKG.parent / name


#: The C of the package: ``runtime/`` (the runtime), ``include/`` (``seer.h``)
#: and ``fast/`` (``seer_env._fast``).
NATIVE = _mapped("native")
#: The runtime's sources and private headers.
RUNTIME = NATIVE / "runtime"
#: The folder of the public header ``seer.h``.
INCLUDE = NATIVE / "include"
#: The shipped models' folders (the package ``seer_env.envs``).
ENVS = _mapped("envs")


def get_include() -> str:
    """The folder holding ``seer.h``, the one header a model includes.

    The same folder as `seer_env.sdk.get_include`, at the top level as in
    NumPy (``numpy.get_include()``) and pybind11, for build systems that compile
    a model themselves:

    ```python
    import seer_env
    print(seer_env.get_include())    # .../site-packages/seer_env/native/include

    # setuptools: Extension("mymodel", ["mymodel.c"],
    #                       include_dirs=[seer_env.get_include()])
    # shell:      cc -I"$(python -c 'import seer_env; print(seer_env.get_include())')" ...
    ```

    Returns:
        The folder's absolute path.
    """
    return str(INCLUDE)


__all__ = ["get_include"]
