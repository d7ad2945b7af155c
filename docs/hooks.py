"""MkDocs hook of the documentation site (``hooks:`` in ``mkdocs.yml``).

The benchmark suite writes its plots to ``benchmarks/results/`` (the README
shows them from there); the Performance page shows the same files, added to
the site as ``performance/<name>.png`` at build time, so there is one copy of
each in the repository and the page never shows a stale one.  A plot the page
links to that is missing fails the strict build (a link to a missing file).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

RESULTS = "benchmarks/results"


def on_files(files: Files, config) -> Files:
    root = Path(config["config_file_path"]).parent
    for png in sorted((root / RESULTS).glob("*.png")):
        files.append(File.generated(config, f"performance/{png.name}",
                                    abs_src_path=str(png)))
    return files
