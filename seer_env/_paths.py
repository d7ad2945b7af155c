"""Where the package's own files are.  Imports only the standard library, so
build scripts can ask for the header folder without the runtime's modules."""

from __future__ import annotations

from pathlib import Path

#: The installed package's folder.
PKG = Path(__file__).resolve().parent
#: The folder of the public header ``seer.h``.
INCLUDE = PKG / "include"


def get_include() -> str:
    """The folder holding ``seer.h``, the one header a model includes.

    The same folder as :func:`seer_env.sdk.get_include`, at the top level as in
    NumPy (``numpy.get_include()``) and pybind11, for build systems that compile
    a model themselves::

        import seer_env
        print(seer_env.get_include())        # .../site-packages/seer_env/include

        # setuptools: Extension("mymodel", ["mymodel.c"],
        #                       include_dirs=[seer_env.get_include()])
        # shell:      cc -I"$(python -c 'import seer_env; print(seer_env.get_include())')" ...

    Returns:
        The folder's absolute path.
    """
    return str(INCLUDE)


__all__ = ["get_include"]
