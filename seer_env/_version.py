"""The package version (the bottom layer: imports nothing; ``pyproject.toml`` reads it)."""

__version__ = "0.3.0"
