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
"""

from __future__ import annotations

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


def on_page_markdown(markdown: str, page, config, files) -> str:
    return company_tables(markdown, Path(config["config_file_path"]).parent)
