"""The C runtime's layers: every file of ``native/runtime/`` has a layer, and a
file reaches (includes the headers of, or calls the functions defined in) only
files of its own layer or below; the executors never reach each other; and no
circle of files reaches itself.

The layers, bottom to top (``docs/architecture.md`` names them with each file):

* ``public``: the declarations a model or a host sees (``seer.h``, ``seer_runtime.h``);
* ``base``: building blocks that know nothing of a runtime (arena, vectors,
  rings, the phase ticket, the process, fault injection);
* ``core``: the runtime's structures and what every executor shares (events,
  queues, contexts, the per-item phase operations, the event loop, the worker
  pool and its phase machine, partitions, the model boundary, errors, traces,
  checking mode);
* ``exec``: the executors -- serial, parallel (conservative windows),
  optimistic -- each its own group: a group never reaches another (the phase
  machine calls the executors' phase kinds through the table each registers);
* ``api``: the host API's entry points (create, the call lifecycle, actions,
  threads and executor switches, step, queries, snapshots).

The graph is read from the sources, no compiler needed: ``#include "..."``
lines, and calls (``seer_name(`` inside a function body or an inline
function) to the functions the ``.c`` files define (non-static, at the top
level).  A header and a ``.c`` file of the same name and layer form one unit
for the circle check (``events.h``'s inline allocation calls ``events.c``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RT = ROOT / "native" / "runtime"
PUBLIC = ROOT / "native" / "include"

ORDER = ("public", "base", "core", "exec", "api")

#: every file of native/runtime/ (and the public header): its layer
LAYER: dict[str, str] = {
    # the declarations a model or host sees
    "seer.h": "public",
    "seer_runtime.h": "public",
    # building blocks
    "base.h": "base",
    "faults.h": "base",
    "faults.c": "base",
    "sync.h": "base",
    "spsc_ring.h": "base",
    "arena.h": "base",
    "vec.h": "base",
    "process.h": "base",
    "process.c": "base",
    "park.h": "base",
    "park.c": "base",
    # the runtime's structures and what the executors share
    "runtime.h": "core",
    "event.h": "core",
    "squeue.h": "core",
    "squeue.c": "core",
    "events.h": "core",
    "events.c": "core",
    "events_layout.c": "core",
    "errors.h": "core",
    "errors.c": "core",
    "model.c": "core",
    "rng.c": "core",
    "trace.h": "core",
    "trace.c": "core",
    "check.h": "core",
    "check.c": "core",
    "check_rows.h": "core",
    "check_rows.c": "core",
    "ctx.h": "core",
    "ctx.c": "core",
    "phases.h": "core",
    "phases.c": "core",
    "partition.h": "core",
    "partition.c": "core",
    "loop.h": "core",
    "loop.c": "core",
    "pool.h": "core",
    "pool.c": "core",
    "company.h": "core",
    "company.c": "core",
    # the executors
    "serial.h": "exec",
    "serial.c": "exec",
    "parallel.h": "exec",
    "parallel.c": "exec",
    "optimistic.h": "exec",
    "optimistic.c": "exec",
    "optimistic_sizing.c": "exec",
    "optimistic_phases.c": "exec",
    "optimistic_state.h": "exec",
    # the host API's entry points
    "api.h": "api",
    "create.c": "api",
    "runtime.c": "api",
    "threads.c": "api",
    "snapshot.c": "api",
}

#: the executors' groups (files of the exec layer): a group reaches no other
EXECUTOR: dict[str, str] = {
    "serial.h": "serial",
    "serial.c": "serial",
    "parallel.h": "parallel",
    "parallel.c": "parallel",
    "optimistic.h": "optimistic",
    "optimistic.c": "optimistic",
    "optimistic_sizing.c": "optimistic",
    "optimistic_phases.c": "optimistic",
    "optimistic_state.h": "optimistic",
}

#: what is still wrong today ("file -> file: why"), shrinking to nothing as the
#: layers are fixed: the test fails when this list is not exactly the truth
KNOWN: set[str] = set()

#: circles of units still there (each a sorted tuple of its files)
KNOWN_CIRCLES: set[tuple[str, ...]] = set()


def _path(name: str) -> Path:
    return PUBLIC / name if name == "seer.h" else RT / name


def _strip(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"'(\\.|[^'\\])'", "' '", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def _bodies(code: str) -> str:
    """The text inside braces (function bodies, inline functions, initializers)."""
    code = re.sub(r'extern\s*""\s*\{', " ", code)  # C++ linkage: not a body
    out, depth = [], 0
    for ch in code:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)
        elif depth > 0:
            out.append(ch)
        elif ch == "\n":
            out.append(ch)
    return "".join(out)


def _definitions(code: str) -> list[str]:
    """Non-static functions a .c file defines at the top level."""
    names = []
    for m in re.finditer(r"^(?!static\b)[A-Za-z_][\w \t*]*?\b(seer_\w+)\s*\(", code, re.M):
        rest = code[m.end() :]
        brace, semi = rest.find("{"), rest.find(";")
        if brace != -1 and (semi == -1 or brace < semi):
            names.append(m.group(1))
    return names


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, str]]:
    """includes[f], calls[f] (the files defining what f calls), and who defines what."""
    sources = {n: _path(n).read_text() for n in LAYER}
    stripped = {n: _strip(t) for n, t in sources.items()}
    defined: dict[str, str] = {}
    for n, code in stripped.items():
        if n.endswith(".c"):
            for name in _definitions(code):
                defined[name] = n
    includes, calls = {}, {}
    for n, text in sources.items():
        includes[n] = set(re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M))
        called = set(re.findall(r"\b(seer_\w+)\s*\(", _bodies(stripped[n])))
        calls[n] = {defined[c] for c in called if c in defined and defined[c] != n}
    return includes, calls, defined


def _violations() -> set[str]:
    includes, calls, _ = _graph()
    found = set()
    for f in LAYER:
        for how, targets in (("includes", includes[f]), ("calls", calls[f])):
            for g in targets:
                if g not in LAYER:
                    continue  # a test model's header (none in the runtime)
                if ORDER.index(LAYER[g]) > ORDER.index(LAYER[f]):
                    found.add(
                        f"{f} -> {g}: {how} a file of a higher layer ({LAYER[f]} -> {LAYER[g]})"
                    )
                elif f in EXECUTOR and g in EXECUTOR and EXECUTOR[f] != EXECUTOR[g]:
                    found.add(
                        f"{f} -> {g}: {how} another executor ({EXECUTOR[f]} -> {EXECUTOR[g]})"
                    )
    return found


def _unit(name: str) -> tuple[str, str]:
    return (name.rsplit(".", 1)[0], LAYER[name])


def _circles() -> set[tuple[str, ...]]:
    """The strongly connected components (of more than one unit) of the unit graph."""
    includes, calls, _ = _graph()
    edges: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for f in LAYER:
        u = _unit(f)
        edges.setdefault(u, set())
        for g in includes[f] | calls[f]:
            if g in LAYER and _unit(g) != u:
                edges[u].add(_unit(g))
    index: dict[tuple[str, str], int] = {}
    low: dict[tuple[str, str], int] = {}
    stack: list[tuple[str, str]] = []
    on: set[tuple[str, str]] = set()
    comps: list[list[tuple[str, str]]] = []

    def visit(v: tuple[str, str]) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    files = {u: sorted(f for f in LAYER if _unit(f) == u) for u in edges}
    return {tuple(sorted(f for u in c for f in files[u])) for c in comps if len(c) > 1}


def test_every_runtime_file_has_a_layer():
    on_disk = {p.name for p in RT.iterdir() if p.suffix in (".c", ".h")} | {"seer.h"}
    assert sorted(on_disk - set(LAYER)) == [], "give these files a layer in LAYER"
    assert sorted(set(LAYER) - on_disk) == [], "LAYER names files that do not exist"
    assert set(EXECUTOR) == {f for f, layer in LAYER.items() if layer == "exec"}


def test_the_graph_is_read():
    """The reader finds what it must (so that the checks below can fail)."""
    includes, calls, defined = _graph()
    assert defined["seer_schedule"] == "ctx.c"
    assert defined["seer_runtime_step"] == "runtime.c"
    assert "runtime.h" in includes["ctx.c"]
    assert "squeue.c" in calls["ctx.c"]  # seer_squeue_push_owner
    assert "events.c" in calls["events.h"]  # the inline allocation's refill


def test_a_file_reaches_only_its_layer_and_below_and_no_other_executor():
    assert _violations() == KNOWN


def test_no_circle():
    assert _circles() == KNOWN_CIRCLES


def test_no_c_file_is_over_900_lines():
    long = {p.name: n for p in RT.glob("*.c") if (n := len(p.read_text().splitlines())) > 900}
    assert long == {}, "split these files along their concerns"
