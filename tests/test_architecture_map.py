"""``docs/architecture.md`` is the one map of the sources: it names every
source file of the package by its path, and names nothing that is not there.

What counts as a source file (explicitly): every file ``git ls-files seer_env native envs``
lists whose name ends in ``.py``, ``.c``, ``.h`` or ``.tmpl`` -- every
``__init__.py`` included (a model folder's is its declaration).  READMEs, data
and ``py.typed`` are not sources.  A file is *named* when its path from the
repository root appears in backquotes, e.g. ```native/runtime/serial.c```.
Every backquoted path of a file (with one of those suffixes) or of a top-level
folder (```tests/```) must exist, and every top-level folder tracked in git
must be named.

A failure lists the paths; fixing it is editing the map (add a row for a new
file, change or drop the row of a moved or removed one).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"
SUFFIXES = (".py", ".c", ".h", ".tmpl")
#: top-level entries that are not folders of the project's own
NOT_FOLDERS = {".gitignore"}


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return out.split()


def _named() -> set[str]:
    """Every backquoted path-like token of the map (no spaces, no placeholders)."""
    return {t for t in re.findall(r"`([^`\s]+)`", MAP.read_text())
            if "/" in t and not re.search(r"[<>*{}|]", t)}


def test_every_source_file_of_the_package_is_on_the_map():
    named = _named()
    sources = [p for p in _tracked()
               if p.startswith(("seer_env/", "native/", "envs/")) and p.endswith(SUFFIXES)]
    assert len(sources) > 50
    missing = sorted(p for p in sources if p not in named)
    assert missing == [], (
        f"{MAP.relative_to(ROOT)} does not name these source files (add a row each, "
        f"with the path in backquotes): {missing}")


def test_the_map_names_no_file_that_does_not_exist():
    files = [t for t in _named() if t.endswith(SUFFIXES)]
    assert len(files) > 50
    gone = sorted(t for t in files if not (ROOT / t).is_file())
    assert gone == [], f"{MAP.relative_to(ROOT)} names files that do not exist: {gone}"


def test_the_map_names_every_top_level_folder():
    named = _named()
    tracked = _tracked()
    folders = {p.split("/", 1)[0] for p in tracked if "/" in p} - NOT_FOLDERS
    missing = sorted(f for f in folders if f"{f}/" not in named)
    assert missing == [], f"{MAP.relative_to(ROOT)} does not name these folders: {missing}"
    top = {t for t in named if re.fullmatch(r"[.\w-]+/", t)}
    gone = sorted(t for t in top if not (ROOT / t).is_dir())
    assert gone == [], f"{MAP.relative_to(ROOT)} names folders that do not exist: {gone}"


def test_the_map_covers_both_model_languages_every_executor_and_stpa():
    text = MAP.read_text()
    for word in ("Two model languages", "serial", "parallel", "optimistic", "STPA",
                 "seer_env/pymodel/", "native/include/seer.h"):
        assert word in text, word
