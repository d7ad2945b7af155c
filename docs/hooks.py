"""MkDocs hook of the documentation site (``hooks:`` in ``mkdocs.yml``).

The benchmark suite writes its plots to ``benchmarks/results/`` (the README
shows them from there); the Performance page shows the same files, added to
the site as ``performance/<name>.png`` at build time, so there is one copy of
each in the repository and the page never shows a stale one.  A plot the page
links to that is missing fails the strict build (a link to a missing file).

The tables of ``seer-env bench company`` are rendered the same way: a line
``<!-- company-table: benchmarks/results/NAME.json -->`` in a page becomes the
table of that results file, as ``seer_env.perf.company.table`` prints it (a
missing or unreadable file fails the build), so the page shows the figures of
the file in the repository and nothing else.

A figure stated inline between ``<!-- result: FILE KEY FORMAT -->`` and
``<!-- /result -->`` is rendered from its results file too
(``benchmarks/results_marks.py``; the test suite fails where the page's text
differs from the file).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

from seer_env.perf.company import table

RESULTS = "benchmarks/results"


def on_files(files: Files, config) -> Files:
    root = Path(config["config_file_path"]).parent
    for png in sorted((root / RESULTS).glob("*.png")):
        files.append(File.generated(config, f"performance/{png.name}",
                                    abs_src_path=str(png)))
    return files


_TABLE = re.compile(r"^<!-- company-table: (benchmarks/results/[\w.-]+\.json) -->$", re.M)


def company_tables(markdown: str, root: Path) -> str:
    """``markdown`` with each company-table line replaced by its table."""
    def render(m: re.Match[str]) -> str:
        res = json.loads((root / m.group(1)).read_text())
        return f"```text\n{table(res)}\n```\n\n*From `{m.group(1)}`.*"
    return _TABLE.sub(render, markdown)


def _results_marks(root: Path):  # benchmarks/results_marks.py, by path (no package import)
    spec = importlib.util.spec_from_file_location(
        "results_marks", root / "benchmarks" / "results_marks.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def on_page_markdown(markdown: str, page, config, files) -> str:
    root = Path(config["config_file_path"]).parent
    marks = _results_marks(root)
    return marks.render(company_tables(markdown, root), root / RESULTS)
