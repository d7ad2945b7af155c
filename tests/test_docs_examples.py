"""Every ```` ```python ```` block of the docs runs: the README, the site's pages
(Getting started, Training, the model guides, the API pages' examples) and
the env pages (the envs' READMEs, which the site includes).

A page's blocks run in order in one fresh interpreter, one namespace, in a
temporary folder (as a reader runs them one after another); a block that
raises fails the test, naming the page and line.  Markers in HTML comments
(invisible on the site and on GitHub) say what a page or block needs:

* ``<!-- docs-test: setup: COMMAND -->`` -- a shell command run in the folder
  before the page's blocks (``seer-env new mymodel``: the model the page's
  reader made);
* ``<!-- docs-test: needs: MODULE -->`` before a block -- it runs only where
  ``MODULE`` is installed (BenchMARL's blocks run in its venv:
  ``tests/in_benchmarl_venv/run.sh``);
* ``<!-- docs-test: skip: REASON -->`` before a block -- not run, and the
  reason is required (a fragment of a file, the same recipe as a block run
  elsewhere);
* ``<!-- docs-test: quick: OLD -> NEW -->`` before a block -- it runs with the
  text ``OLD``, which must occur in it exactly once, replaced by ``NEW``: a
  training loop's length (``range(5) -> range(1)``), never what the block
  calls or how.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the pages whose python blocks run
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "api").glob("*.md"),
     *(ROOT / "envs").glob("*/README.md")], key=str)

_FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                    re.S | re.M)
_MARK = re.compile(r"<!-- docs-test: (?P<kind>setup|needs|skip|quick): (?P<arg>.*?) -->",
                   re.S)


def page_blocks(path: Path) -> tuple[list[str], list[dict[str, object]]]:
    """The page's setup commands and its python blocks, each with its line,
    body (dedented by its fence's indent) and the marker just before it."""
    text = path.read_text()
    setups = [m.group("arg").strip() for m in _MARK.finditer(text) if m.group("kind") == "setup"]
    blocks: list[dict[str, object]] = []
    last_end = 0
    for m in _FENCE.finditer(text):
        between = text[last_end:m.start()]
        last_end = m.end()
        if m.group("lang").strip() != "python":
            continue
        marks = [mk for mk in _MARK.finditer(between) if mk.group("kind") != "setup"]
        mark = marks[-1] if marks and not between[marks[-1].end():].strip() else None
        indent = len(m.group("indent"))
        body = "\n".join(line[indent:] for line in m.group("body").splitlines())
        blocks.append({"line": text.count("\n", 0, m.start()) + 2, "body": body,
                       "mark": None if mark is None else (mark.group("kind"),
                                                          mark.group("arg").strip())})
    return setups, blocks


_RUNNER = r"""
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for b in blocks:
    try:
        exec(compile(b["body"], b["where"], "exec"), ns)
    except BaseException:
        print("DOCS-TEST-FAILED " + b["where"], flush=True)
        traceback.print_exc()
        sys.exit(1)
    print("DOCS-TEST-OK " + b["where"], flush=True)
"""


def _reader_env() -> dict[str, str]:
    """The environment a page's blocks run in: this venv's tools on PATH, the
    repository root importable (``oracles``), no STPA cache, no display."""
    return {**os.environ, "SEER_STPA_CACHE": "0", "MPLBACKEND": "Agg",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}


def _pages_with_blocks() -> list[Path]:
    return [p for p in PAGES if page_blocks(p)[1]]


@pytest.mark.parametrize("page", _pages_with_blocks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_of_the_page_runs(page: Path, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    setups, blocks = page_blocks(page)
    rel = page.relative_to(ROOT)
    run = []
    for b in blocks:
        where = f"{rel}:{b['line']}"
        mark = b["mark"]
        if mark is not None and mark[0] == "skip":
            assert len(str(mark[1])) > 10, f"{where}: a skip needs its reason"
            continue
        if mark is not None and mark[0] == "needs" and importlib.util.find_spec(
                str(mark[1])) is None:
            continue
        body = str(b["body"])
        if mark is not None and mark[0] == "quick":
            body = _quick(body, str(mark[1]), where)
        run.append({"where": where, "body": body})
    if not run:
        pytest.skip(f"{rel}: no block can run here (they need what is not installed)")
    if any(_starts_ray(b["body"]) for b in run):
        request.getfixturevalue("ray_turn_test")  # one Ray session at a time (conftest)
    env = _reader_env()
    for cmd in setups:
        subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, check=True,
                       capture_output=True, timeout=300)
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(run))
    script = tmp_path / "run_blocks.py"
    script.write_text(_RUNNER)
    out = subprocess.run([sys.executable, str(script), str(spec)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=900)
    ran = [line.split(" ", 1)[1] for line in out.stdout.splitlines()
           if line.startswith("DOCS-TEST-OK ")]
    assert out.returncode == 0, f"{out.stdout[-3000:]}\n{out.stderr[-6000:]}"
    assert ran == [b["where"] for b in run]


def _quick(body: str, arg: str, where: str) -> str:
    """The block with a ``quick`` marker's ``OLD -> NEW`` applied (``OLD``
    exactly once in it)."""
    old, sep, new = arg.partition(" -> ")
    assert sep and old, f"{where}: a quick marker is 'OLD -> NEW', not {arg!r}"
    assert body.count(old) == 1, f"{where}: {old!r} must occur once in the block"
    return body.replace(old, new)


def test_the_markers_are_read_as_written(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "<!-- docs-test: setup: seer-env new m -->\n"
        "```python\nx = 1\n```\n"
        "<!-- docs-test: skip: a fragment of a model's file -->\n"
        "```python\nfrom nowhere import y\n```\n"
        "text between\n<!-- docs-test: needs: nosuchmodule -->\n\n"
        "  ```python\n  z = 2\n  ```\n"
        "<!-- docs-test: skip: not for the next block -->\nprose\n"
        "```python\nw = 3\n```\n```bash\nls\n```\n"
        "<!-- docs-test: quick: range(5) -> range(1) -->\n"
        "```python\nfor _ in range(5):\n    pass\n```\n")
    setups, blocks = page_blocks(page)
    assert setups == ["seer-env new m"]
    assert [(b["line"], b["body"], b["mark"]) for b in blocks] == [
        (3, "x = 1", None), (7, "from nowhere import y", ("skip", "a fragment of a model's file")),
        (13, "z = 2", ("needs", "nosuchmodule")), (18, "w = 3", None),
        (25, "for _ in range(5):\n    pass", ("quick", "range(5) -> range(1)"))]
    assert _quick(str(blocks[-1]["body"]), "range(5) -> range(1)", "p.md:25") == \
        "for _ in range(5):\n    pass".replace("range(5)", "range(1)")
    # what it replaces must be there, once: a page edited under it fails
    with pytest.raises(AssertionError, match="must occur once"):
        _quick("for _ in range(3): pass", "range(5) -> range(1)", "p.md:25")
    with pytest.raises(AssertionError, match="must occur once"):
        _quick("range(5); range(5)", "range(5) -> range(1)", "p.md:25")
    with pytest.raises(AssertionError, match="OLD -> NEW"):
        _quick("range(5)", "range(5) range(1)", "p.md:25")


# -- the API pages' examples: the docstrings mkdocstrings renders ------------------------

_API_TARGET = re.compile(r"^::: ([\w.]+)", re.M)


def _api_docstrings() -> list[tuple[str, list[str]]]:
    """The python blocks of each docstring the API pages render: each ``:::
    target``'s docstring and, for a module, those of its own classes and
    functions, by name."""
    import inspect

    out: list[tuple[str, list[str]]] = []
    seen: set[int] = set()
    targets = sorted({t for page in (ROOT / "docs" / "api").glob("*.md")
                      for t in _API_TARGET.findall(page.read_text())})
    for target in targets:
        obj = _resolve(target)
        if obj is None:  # its module needs a library this venv lacks (BenchMARL's)
            continue
        objs = [(target, obj)]
        if inspect.ismodule(obj):
            objs += [(f"{target}.{n}", o) for n, o in vars(obj).items()
                     if (inspect.isclass(o) or inspect.isfunction(o))
                     and getattr(o, "__module__", None) == obj.__name__]
        for name, o in objs:
            if id(o) in seen:
                continue
            seen.add(id(o))
            doc = inspect.getdoc(o) or ""
            blocks = ["\n".join(line[len(m.group("indent")):]
                                for line in m.group("body").splitlines())
                      for m in _FENCE.finditer(doc) if m.group("lang").strip() == "python"]
            if blocks:
                out.append((name, blocks))
    return out


def _self_contained(body: str) -> bool:
    return re.search(r"^(import|from) \w", body, re.M) is not None


def api_examples() -> list[tuple[str, str]]:
    """The runnable examples of the docstrings the API pages render: from a
    docstring's first self-contained block (one that imports what it uses)
    on, every block of it, in order, as one script: a block without an
    import continues the story (``venv.send(...)`` on the venv of the class's
    example) and runs after it."""
    out: list[tuple[str, str]] = []
    for name, blocks in _api_docstrings():
        first = next((i for i, b in enumerate(blocks) if _self_contained(b)), None)
        if first is not None:
            out.append((name, "\n\n".join(blocks[first:])))
    return out


def test_the_api_pages_fragments_are_python() -> None:
    """The blocks no self-contained block comes before (a decorator's use, a
    call on the reader's own config) cannot run alone: each must at least be
    valid Python."""
    import ast

    fragments = [(name, b) for name, blocks in _api_docstrings() for b in blocks
                 if not any(_self_contained(x) for x in blocks[:blocks.index(b) + 1])]
    assert fragments  # (twelve when this was written)
    bad = []
    for name, b in fragments:
        try:
            ast.parse(b)
        except SyntaxError as exc:
            bad.append(f"{name}: {exc}")
    assert not bad, bad


def _resolve(target: str) -> object | None:
    """The object ``a.b.C`` names: the longest importable module prefix, then
    attributes; None where the module cannot be imported here."""
    import importlib

    parts = target.split(".")
    if importlib.util.find_spec(parts[0]) is None:
        return None
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj: object = importlib.import_module(name)
        except ModuleNotFoundError:
            continue  # a class or function name, not a module
        except ImportError:
            return None  # the module exists but needs what is not installed
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    return None


_LIBS = {"ray": "ray", "torchrl": "torchrl", "benchmarl": "benchmarl", "torch": "torch"}


def _starts_ray(body: str) -> bool:
    """A block that starts a Ray session (``ray.init``)."""
    return "ray.init(" in body


def test_the_api_pages_self_contained_examples_run(tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    examples = api_examples()
    assert len(examples) >= 15, [n for n, _ in examples]
    run = []
    for name, body in examples:
        libs = set(re.findall(r"^(?:import|from) (\w+)", body, re.M)) & set(_LIBS)
        if any(importlib.util.find_spec(lib) is None for lib in libs):
            continue  # needs what this venv lacks (BenchMARL's: its own venv)
        run.append({"where": f"docstring of {name}", "body": body})
    if any(_starts_ray(b["body"]) for b in run):
        request.getfixturevalue("ray_turn_test")  # one Ray session at a time (conftest)
    env = _reader_env()
    # the model a reader made: "mymodel" and "path/to/mymodel" in the examples
    for where in ("mymodel", "path/to/mymodel"):
        (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "seer_env.cli", "new", Path(where).name, "--dir",
                        str((tmp_path / where).parent)], cwd=tmp_path, env=env, check=True,
                       capture_output=True, timeout=300)
    # one interpreter per example: each stands alone
    failures = []
    for b in run:
        spec = tmp_path / "blocks.json"
        spec.write_text(json.dumps([b]))
        script = tmp_path / "run_blocks.py"
        script.write_text(_RUNNER)
        out = subprocess.run([sys.executable, str(script), str(spec)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            failures.append(f"{b['where']}:\n{out.stderr[-2000:]}")
    assert not failures, "\n\n".join(failures)
