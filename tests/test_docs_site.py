"""The documentation site as a reader gets it: built once with mkdocs (strict)
and every page's HTML checked for what renders wrong or leads nowhere.

`check_page` fails on
* stray list markers: a paragraph that starts with (or has a line starting
  with) ``* ``, ``- ``, ``+ `` or ``1. ``: a list Python-Markdown did not see,
  usually continuation lines indented by 2 spaces instead of 4;
* reST leftovers in text: Sphinx roles (``:class:`` ...), literal-block markers
  (``Example::``) and reST table rules (``=====``), outside code;
* images whose file is not in the site, and images, scripts or stylesheets
  loaded from another host (the site works offline);
* internal links (relative hrefs, with or without ``#anchor``) to a page that
  is not in the site or to an anchor that page does not have.

The build needs the ``[docs]`` extra (skipped with the reason without it);
``docs/check_site.sh`` looks at the pages in headless Chromium.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: a list item Python-Markdown left inside a paragraph
_MARKER = re.compile(r"(?:^|\n)[ \t]*(?:[*+-]|\d+\.)[ \t]+\S")
#: a Sphinx role; rendered from Markdown its target is a code span (``:class:<code>X</code>``)
_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj|ref|doc|py:\w+):")
_LITERAL = re.compile(r"\S::(?:\s|$)")
_RULE = re.compile(r"={5,}")
#: elements whose text is code (never checked for prose markers)
_CODE = {"code", "pre", "kbd", "samp", "script", "style"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str]] = []  # (tag, url): a href, img src, script src, ...
        self.paragraphs: list[str] = []
        self.text: list[str] = []  # prose text nodes, outside code
        self._stack: list[str] = []
        self._code = 0
        self._para: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v for k, v in attrs if v is not None}
        for key in ("id", "name"):
            if key in a and (key == "id" or tag == "a"):
                self.ids.add(a[key])
        if tag == "a" and "href" in a:
            self.refs.append(("a", a["href"]))
        elif tag in ("img", "script", "source") and "src" in a:
            self.refs.append((tag, a["src"]))
        elif tag == "link" and "href" in a and "stylesheet" in a.get("rel", ""):
            self.refs.append(("link", a["href"]))
        if tag in _VOID:
            return
        self._stack.append(tag)
        if tag in _CODE:
            self._code += 1
        if tag == "p" and self._para is None:
            self._para = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or tag not in self._stack:
            return
        while self._stack:
            t = self._stack.pop()
            if t in _CODE:
                self._code -= 1
            if t == "p" and self._para is not None:
                self.paragraphs.append("".join(self._para))
                self._para = None
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._code:
            if self._para is not None:
                self._para.append("x" * len(data.strip()))  # code: text, not a marker
            return
        self.text.append(data)
        if self._para is not None:
            self._para.append(data)


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def _target(page: str, url: str) -> tuple[str, str] | None:
    """The site file (posix path under the site) and anchor an internal
    ``url`` on ``page`` points to; None for an external one."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("//", "mailto:", "data:")):
        return None
    path = unquote(parts.path)
    if not path:
        return page, unquote(parts.fragment)
    if path.startswith("/"):
        full = posixpath.normpath(path.lstrip("/"))
    else:
        full = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if path.endswith("/") or full in (".", ""):
        full = posixpath.join("" if full == "." else full, "index.html")
    return full, unquote(parts.fragment)


def check_page(name: str, html: str, site: dict[str, _Page | None]) -> list[str]:
    """What is wrong with the page ``name`` (its posix path in the site):
    ``site`` maps every file of the site to its parsed page (None for a file
    that is not HTML)."""
    page = parse(html)
    problems = []
    for p in page.paragraphs:
        if _MARKER.search(p):
            problems.append(f"{name}: a list marker inside a paragraph: {p.strip()[:80]!r}")
    prose = "".join(page.text)
    for rx, what in ((_ROLE, "a reST role"), (_LITERAL, "a reST '::' marker"),
                     (_RULE, "a reST table rule")):
        for m in rx.finditer(prose):
            around = prose[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
            problems.append(f"{name}: {what} in the text: {around!r}")
    for tag, url in page.refs:
        t = _target(name, url)
        if t is None:
            if tag != "a":
                problems.append(f"{name}: <{tag}> loads {url} from another host")
            continue
        path, anchor = t
        if path not in site:
            problems.append(f"{name}: <{tag}> {url!r}: no {path} in the site")
        elif anchor and tag == "a":
            target = site[path]
            if target is not None and anchor not in target.ids:
                problems.append(f"{name}: link {url!r}: {path} has no anchor #{anchor}")
    return problems


def check_site(site_dir: Path) -> list[str]:
    """Every problem of every HTML page of a built site."""
    files = [p for p in site_dir.rglob("*") if p.is_file()]
    site: dict[str, _Page | None] = {}
    texts = {}
    for f in files:
        rel = f.relative_to(site_dir).as_posix()
        if f.suffix == ".html":
            texts[rel] = f.read_text(encoding="utf-8")
            site[rel] = parse(texts[rel])
        else:
            site[rel] = None
    problems = []
    for rel, html in sorted(texts.items()):
        problems += check_page(rel, html, site)
    return problems


# -- the checker itself, on pages made to fail it -----------------------------------


def _site(**pages: str) -> dict[str, _Page | None]:
    site: dict[str, _Page | None] = {k: parse(v) for k, v in pages.items()}
    site["img/ok.png"] = None
    return site


GOOD = """<html><body><h1 id="top">T</h1>
<p>Text with <code>a::b</code> and <code>:class:`X`</code> in code, an
<a href="other/">other page</a>, <a href="#top">this one</a>,
<a href="other/#sec">a section</a>, <a href="https://example.org/x">outside</a>.</p>
<ul><li>item one</li></ul><p>1.5 is a number, not a list; a - b is a minus.</p>
<pre><code>* not a marker
Example::
=====</code></pre>
<img src="img/ok.png"></body></html>"""


def test_checker_passes_a_good_page():
    site = _site(**{"index.html": GOOD, "other/index.html": '<h2 id="sec">S</h2>'})
    assert check_page("index.html", GOOD, site) == []


@pytest.mark.parametrize("html, expected", [
    ("<p>Some text\n* not an item</p>", "list marker inside a paragraph"),
    ("<p>* starts with a marker</p>", "list marker inside a paragraph"),
    ("<p>- starts with a dash</p>", "list marker inside a paragraph"),
    ("<p>steps:\n1. first\n2. second</p>", "list marker inside a paragraph"),
    ("<p>see :class:`Runtime` there</p>", "a reST role"),
    ("<p>see :class:<code>Runtime</code> there</p>", "a reST role"),
    ("<div>the <em>:func:`check`</em> function</div>", "a reST role"),
    ("<p>Example::</p>", "'::' marker"),
    ("<p>works like this:: then</p>", "'::' marker"),
    ("<p>a table: ==========</p>", "reST table rule"),
    ('<img src="img/missing.png">', "no img/missing.png in the site"),
    ('<img src="https://cdn.example.org/x.png">', "from another host"),
    ('<script src="https://cdn.example.org/highlight.js"></script>', "from another host"),
    ('<link rel="stylesheet" href="https://cdn.example.org/x.css">', "from another host"),
    ('<a href="nowhere/">x</a>', "no nowhere/index.html in the site"),
    ('<a href="other/#missing">x</a>', "has no anchor #missing"),
    ('<a href="#gone">x</a>', "has no anchor #gone"),
    ('<a href="../other/index.html#sec">x</a>', "no ../other/index.html"),
])
def test_checker_fails_a_bad_page(html, expected):
    page = f"<html><body><h1 id='top'>T</h1>{html}</body></html>"
    site = _site(**{"index.html": page, "other/index.html": '<h2 id="sec">S</h2>'})
    problems = check_page("index.html", page, site)
    assert len(problems) == 1 and expected in problems[0], problems


def test_checker_resolves_links_from_nested_pages():
    page = '<a href="../../other/#sec">x</a><img src="../../img/ok.png">'
    site = _site(**{"a/b/index.html": page, "other/index.html": '<h2 id="sec">S</h2>'})
    assert check_page("a/b/index.html", page, site) == []


# -- the real site ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for module in ("mkdocs", "mkdocstrings", "material"):
        pytest.importorskip(module, reason=f"the [docs] extra is not installed (no {module})")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    # no -q: it keeps warnings from being counted, and --strict then passes them
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


def test_site_builds_every_page(built_site: Path):
    for page in ("index.html", "getting-started/index.html", "training/index.html",
                 "performance/index.html", "changelog/index.html", "envs/pcs/index.html",
                 "envs/aircraft/index.html", "api/envs/index.html"):
        assert (built_site / page).is_file(), page
    # figures: the env pages' renders, the learning curve, the benchmark plots
    for img in ("aircraft_frame.png", "pcs_frame.png", "ppo_pcs.png",
                "performance/stpa_ratios.png"):
        assert (built_site / img).is_file(), img
    # the scripts that draw the figures and check the site are not published
    assert not list(built_site.rglob("*.py")) and not list(built_site.rglob("*.sh"))


def test_site_has_no_broken_markup_links_or_images(built_site: Path):
    problems = check_site(built_site)
    assert problems == [], "\n".join(problems)


def test_readme_company_table_is_the_results_files():
    """The README's table of `seer-env bench company` is the one the results
    file in the repository gives (the Performance page renders it from the
    file at build time, `docs/hooks.py`): a new run that did not update the
    README fails here."""
    import json
    import re

    from seer_env.perf.company import table

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    m = re.search(r"<!-- company-table:start -->\n```text\n(.*?)\n```\n<!-- company-table:end -->",
                  readme, re.S)
    assert m is not None, "README.md lost its company-table block"
    res = json.loads((root / "benchmarks/results/company.json").read_text())
    assert m.group(1) == table(res)


def test_readme_suite_results_are_the_suite_results_file():
    """The README's benchmark-suite section (the STPA table, the Python
    layer, the ports, the rollout, tracing off; the Performance page includes
    it) is the markdown the suite's run wrote beside its figures
    (``readme_markdown`` of `benchmarks/results/bench_suite.json`): a new run
    that did not update the README, or a hand edit of a figure, fails here."""
    import json
    import re

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    m = re.search(r"<!-- --8<-- \[start:perf-results\] -->\n(.*?)\n"
                  r"<!-- --8<-- \[end:perf-results\] -->", readme, re.S)
    assert m is not None, "README.md lost its perf-results block"
    res = json.loads((root / "benchmarks/results/bench_suite.json").read_text())
    assert m.group(1).strip() == res["readme_markdown"].strip()


def test_company_table_markers_render_the_results_file(tmp_path: Path):
    import importlib.util
    import json

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("docs_hooks", root / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    from seer_env.perf.company import table

    page = "a\n<!-- company-table: benchmarks/results/company.json -->\nb\n"
    out = hooks.company_tables(page, root)
    res = json.loads((root / "benchmarks/results/company.json").read_text())
    assert out == ("a\n```text\n" + table(res) + "\n```\n\n*From "
                   "`benchmarks/results/company.json`.*\nb\n")
    with pytest.raises(FileNotFoundError):
        hooks.company_tables("<!-- company-table: benchmarks/results/nope.json -->", root)


def _results_marks(root: Path):  # benchmarks/results_marks.py, by path, as docs/hooks.py
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "results_marks", root / "benchmarks" / "results_marks.py")
    marks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(marks)
    return marks


def test_every_figure_a_page_cites_is_its_results_files():
    """Figures stated between ``<!-- result: FILE KEY FORMAT -->`` and
    ``<!-- /result -->`` (benchmarks/results_marks.py) equal their results
    file's values: a benchmark that writes new results fails this until the
    pages are regenerated (``python benchmarks/results_marks.py --write``)."""
    root = Path(__file__).resolve().parents[1]
    marks = _results_marks(root)
    stale, cited = [], 0
    for page in marks.pages(root):
        text = page.read_text()
        cited += len(marks._SPAN.findall(text))
        stale += [f"{page.relative_to(root)}: {b}" for b in marks.check(text)]
    assert not stale, stale
    assert cited >= 80  # the README's targets table, the Performance page, the guides
    # a span that starts a line ends a paragraph in Markdown (an HTML block)
    starts = [f"{page.relative_to(root)}:{i}" for page in marks.pages(root)
              for i, line in enumerate(page.read_text().splitlines(), 1)
              if line.lstrip().startswith("<!-- result")]
    assert not starts, starts


def test_every_row_of_the_readmes_targets_table_cites_a_results_file():
    """Each row's result comes from the results file its command writes (the
    table was a log of hand-copied ranges over runs)."""
    root = Path(__file__).resolve().parents[1]
    marks = _results_marks(root)
    text = (root / "README.md").read_text()
    block = text[text.index("[start:perf-targets]"):text.index("[end:perf-targets]")]
    rows = [r for r in block.splitlines() if r.startswith("| ") and not r.startswith("| what")]
    assert len(rows) >= 20
    bare = [r.split(" | ")[0] for r in rows if not marks._SPAN.search(r.split(" | ")[2])]
    assert not bare, bare


def test_a_changed_results_file_changes_the_figure(tmp_path: Path):
    root = Path(__file__).resolve().parents[1]
    marks = _results_marks(root)
    (tmp_path / "r.json").write_text(json.dumps({"a": {"b": 1.234}}))
    page = "costs <!-- result: r.json a.b {:.2f}x -->1.23x<!-- /result --> per event"
    assert marks.check(page, tmp_path) == []
    (tmp_path / "r.json").write_text(json.dumps({"a": {"b": 1.5}}))
    assert marks.check(page, tmp_path) == [
        "r.json a.b: the page says '1.23x', the file '1.50x'"]
    assert marks.render(page, tmp_path) == page.replace("1.23x", "1.50x")
    # a list's item by its position
    (tmp_path / "l.json").write_text(json.dumps({"w": [{"r": 0.5}, {"r": 0.25}]}))
    assert marks.check("<!-- result: l.json w.1.r {:.2f}x -->0.25x<!-- /result -->",
                       tmp_path) == []


def test_the_readme_counts_the_checkers_passes_as_the_code_does():
    """The README's account of the contract checker names as many passes as
    `seer_env.check.passes.PASSES` runs (it said seven when eight ran)."""
    from seer_env.check.passes import PASSES

    words = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    m = re.search(r"runs the model\s+through (\w+) passes", text)
    assert m is not None and m.group(1) == words[len(PASSES)], (m and m.group(1), len(PASSES))


def test_the_readmes_command_line_block_is_the_clis_usage(monkeypatch: pytest.MonkeyPatch):
    """The README's "Command line" block is what the CLI's parser prints as each
    command's usage (at 100 columns): an option added, renamed or dropped in
    the code fails this until the README says so too."""
    import argparse

    from seer_env.cli import build_parser

    monkeypatch.setenv("COLUMNS", "100")
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    want = "\n".join(sp.format_usage().replace("usage: ", "").rstrip()
                     for sp in sub.choices.values()) + "\nseer-env --version"
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    m = re.search(r"## Command line\n\n<!--[^\n]*-->\n```\n(.*?)\n```", text, re.S)
    assert m is not None, "README.md lost its Command line block"
    assert m.group(1) == want
