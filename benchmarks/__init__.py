"""The repository's benchmark scripts (not part of the installed package).

Each module runs as ``python benchmarks/NAME.py`` from a checkout; tests import
them as ``benchmarks.NAME`` (``tests/conftest.py`` puts the checkout first on
``sys.path``).
"""
