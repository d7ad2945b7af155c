"""Figures in the docs that come from the benchmarks' results files.

A page states a measured figure between two HTML comments (invisible on
GitHub and on the site):

    <!-- result: pymodel.json serial_ratio {:.2f}x -->1.14x<!-- /result -->

``pymodel.json`` is a file of ``benchmarks/results/``, ``serial_ratio`` a key
of it (``a.b`` for a nested one, ``a.3.b`` for the fourth item of a list),
``{:.2f}x`` the format of the value.
`check` lists every span whose text is not its file's value so formatted
(``tests/test_docs_site.py`` fails on any), and ``python
benchmarks/results_marks.py --write`` rewrites the spans of every page from
the files after a benchmark wrote new results; the docs site's hook renders
them the same way at build time.  So a page never states a figure its
results file does not hold.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

#: the pages whose spans are checked and rewritten
PAGES = ("README.md", "docs/*.md", "docs/api/*.md", "envs/*/README.md")

_SPAN = re.compile(r"<!-- result: (?P<file>[\w.-]+\.json) (?P<key>[\w.-]+) (?P<fmt>.*?) -->"
                   r"(?P<text>.*?)<!-- /result -->")


def value(file: str, key: str, root: Path = RESULTS) -> Any:
    """``key`` (dotted for nested dicts) of the results file ``file``."""
    data: Any = json.loads((root / file).read_text())
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def _formatted(m: re.Match[str], root: Path) -> str:
    return m.group("fmt").format(value(m.group("file"), m.group("key"), root))


def render(text: str, root: Path = RESULTS) -> str:
    """``text`` with every span's text replaced by its file's value."""
    return _SPAN.sub(lambda m: m.group(0).replace(
        f"-->{m.group('text')}<!--", f"-->{_formatted(m, root)}<!--", 1), text)


def check(text: str, root: Path = RESULTS) -> list[str]:
    """The spans of ``text`` whose text is not their file's value:
    ``"file key: page says X, the file Y"``."""
    out = []
    for m in _SPAN.finditer(text):
        want = _formatted(m, root)
        if m.group("text") != want:
            out.append(f"{m.group('file')} {m.group('key')}: the page says "
                       f"{m.group('text')!r}, the file {want!r}")
    return out


def pages(root: Path = ROOT) -> list[Path]:
    return sorted({p for pattern in PAGES for p in root.glob(pattern)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the pages' spans")
    a = ap.parse_args()
    stale = 0
    for page in pages():
        text = page.read_text()
        bad = check(text)
        stale += len(bad)
        for b in bad:
            print(f"{page.relative_to(ROOT)}: {b}")
        if a.write and bad:
            page.write_text(render(text))
    print(f"{stale} stale figure(s){' rewritten' if a.write else ''}")


if __name__ == "__main__":
    main()
