"""Compile seer model extensions: the runtime and one model in one cffi module.

Every model reaches Python the same way, shipped or not: its folder's C
sources are compiled together with the runtime (``seer_env/runtime``) and a
generated cffi glue into one extension module whose functions are the
runtime's host API (``seer_runtime.h``) plus ``seer_model_table()``, which
returns the model's table.  Calls between the runtime and the model are
direct calls inside one shared object, exactly as if the model were compiled
into the package.

Two callers use it, in the same way: ``setup.py`` builds the shipped models
(and ``seer_env._core``, the runtime without a model, for models made at run
time) when the package is installed, and :mod:`seer_env.sdk` builds users'
models into a cache.  Only the standard library and cffi are imported, so
``setup.py`` can load this file by path before ``seer_env`` is installed.

Layouts are never copied by hand: the cffi declarations are the public
headers themselves, with the C-only parts filtered out (:func:`cdef`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

PKG = Path(__file__).resolve().parent
INCLUDE = PKG / "include"
RUNTIME = PKG / "runtime"

#: Flags of every object: C11, no fused multiply-adds (every executor must
#: round alike), every warning.  ``-fvisibility=hidden``: only the module's
#: init function is exported, so runtime <-> model calls are direct.
CFLAGS = (
    "-std=c11",
    "-O2",
    "-ffp-contract=off",
    "-fno-strict-aliasing",
    "-fvisibility=hidden",
    "-fPIC",
    "-pthread",
    "-Wall",
    "-Wextra",
)

#: Sources of nondeterminism a model must not use (the contract allows only
#: seer_rng_*).  Calls to them from the module are linked to checking
#: wrappers (runtime/check.c) that report them in checking mode and forward
#: them otherwise.
WRAPPED = (
    "rand", "rand_r", "random", "srand", "srandom", "drand48", "erand48", "lrand48",
    "nrand48", "mrand48", "jrand48", "srand48", "time", "clock", "gettimeofday",
    "clock_gettime", "timespec_get",
)

LDFLAGS = (
    "-shared",
    "-pthread",
    # bind every symbol at load time, so the GOT is read-only (RELRO) and
    # the checking mode can protect the module's writable data alone
    "-Wl,-z,now",
    "-Wl,-z,relro",
    *(f"-Wl,--wrap={f}" for f in WRAPPED),
)

#: Declarations of the generated glue, after the headers'.
_GLUE_CDEF = """
const seer_model *seer_model_table(void);
const char *seer_build_id(void);
"""

_TABLE_RE = re.compile(r"\bconst\s+seer_model\s+([A-Za-z_]\w*)\s*=")


class BuildFailed(Exception):
    """A compile or link step failed; ``log`` holds the compiler's output."""

    def __init__(self, message: str, log: str = "", command: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.log = log
        self.command = list(command)

    def __str__(self) -> str:
        return f"{self.args[0]}\n{self.log}" if self.log else str(self.args[0])


# -- cdef from the real headers ----------------------------------------------


def _filter_header(text: str) -> str:
    """The declarations of a public header that cffi's parser takes.

    Drops comments, ``#include``, include guards, ``#ifdef __cplusplus``
    blocks, ``#ifndef SEER_CFFI`` blocks (C-only helpers) and every macro
    that is not an integer constant.
    """
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"\\\n", " ", text)  # join continued lines
    out: list[str] = []
    skip: list[bool] = []  # per open conditional: is its body dropped?
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            d = s[1:].strip()
            if d.startswith(("ifdef __cplusplus", "ifndef SEER_CFFI")):
                skip.append(True)
            elif d.startswith(("ifndef", "ifdef", "if ")):
                skip.append(False)
            elif d.startswith("endif"):
                skip.pop()
            elif d.startswith("define") and not any(skip):
                m = re.match(r"define\s+([A-Za-z_]\w*)\s+\(?(0x[0-9a-fA-F]+|\d+)[uUlL]*\)?$", d)
                if m and not m.group(1).endswith("_H"):
                    out.append(f"#define {m.group(1)} {m.group(2)}")
            continue
        if not any(skip):
            out.append(line)
    if skip:
        raise ValueError("unbalanced preprocessor conditionals in a public header")
    return "\n".join(out)


def cdef() -> str:
    """cffi declarations of every extension: ``seer.h``, ``seer_runtime.h``, glue."""
    parts = [_filter_header((INCLUDE / "seer.h").read_text()),
             _filter_header((RUNTIME / "seer_runtime.h").read_text()), _GLUE_CDEF]
    return "\n".join(parts)


# -- what a build consists of -------------------------------------------------


def runtime_sources() -> list[Path]:
    return sorted(RUNTIME.glob("*.c"))


def model_sources(model_dir: Path) -> list[Path]:
    return sorted(p for p in Path(model_dir).glob("*.c") if p.is_file())


def find_table(model_dir: Path) -> str:
    """The symbol of the one ``const seer_model NAME = {...}`` in the model's sources."""
    found = []
    for src in model_sources(model_dir):
        for m in _TABLE_RE.finditer(re.sub(r"/\*.*?\*/", " ", src.read_text(), flags=re.S)):
            found.append((m.group(1), src.name))
    if len(found) != 1:
        where = ", ".join(f"{n} in {f}" for n, f in found) or "none"
        raise BuildFailed(
            f"{model_dir}: the model's C sources must define exactly one model table "
            f"(`const seer_model my_model = {{ .api_version = SEER_API_VERSION, ... }};`); "
            f"found {where}"
        )
    return found[0][0]


def _hash_files(h: hashlib._Hash, root: Path, paths: Sequence[Path]) -> None:
    for p in sorted(paths):
        h.update(str(p.relative_to(root)).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")


def source_hash(model_dir: Path | None, werror: bool, extra_cflags: Sequence[str] = ()) -> str:
    """Hash of everything that goes into a module: the runtime, the public
    headers, the model folder's ``.c``/``.h`` files, the flags and the
    interpreter's extension ABI.  Paths count relative to their folder, so
    an installed copy of a folder hashes like its source."""
    h = hashlib.sha256()
    h.update(" ".join((*CFLAGS, *LDFLAGS, *extra_cflags, str(werror))).encode())
    h.update(str(sysconfig.get_config_var("EXT_SUFFIX")).encode())
    _hash_files(h, RUNTIME, [*RUNTIME.glob("*.c"), *RUNTIME.glob("*.h")])
    _hash_files(h, INCLUDE, list(INCLUDE.glob("*.h")))
    if model_dir is not None:
        md = Path(model_dir)
        _hash_files(h, md, [*model_sources(md), *(p for p in md.rglob("*.h") if p.is_file())])
    return h.hexdigest()[:32]


def ext_suffix() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX") or ".so")


# -- compiling -------------------------------------------------------------------


def compiler() -> list[str]:
    """The C compiler: ``$CC``, else the one Python was built with, else ``cc``."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cmd = shlex.split(cc)
    if not shutil.which(cmd[0]):
        for alt in ("cc", "gcc", "clang"):
            if shutil.which(alt):
                return [alt]
        raise BuildFailed(
            "no C compiler found: install one (e.g. `apt-get install gcc` or "
            "`conda install c-compiler`) or set CC"
        )
    return cmd


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace")
    except OSError as exc:
        raise BuildFailed(f"could not run {cmd[0]}: {exc}", command=cmd) from None
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0:
        raise BuildFailed(f"{Path(cmd[0]).name} failed (exit {r.returncode})", out, cmd)
    return out


def _glue_source(module: str, table: str | None, build_id: str) -> str:
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(cdef())
    lines = [
        # cffi's generated glue is not ours to keep -Wextra clean; the runtime
        # and the model are compiled with every warning on.
        '#pragma GCC diagnostic ignored "-Wunused-parameter"',
        '#pragma GCC diagnostic ignored "-Wsign-compare"',
        '#include "seer_runtime.h"',
    ]
    if table:
        lines.append(f"extern const seer_model {table};")
        lines.append(f"static const seer_model *seer_model_table(void) {{ return &{table}; }}")
    else:
        lines.append("static const seer_model *seer_model_table(void) { return NULL; }")
    lines.append(f'static const char *seer_build_id(void) {{ return "{build_id}"; }}')
    ffi.set_source(module, "\n".join(lines))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "glue.c"
        with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating ..."
            ffi.emit_c_code(str(path))
        return path.read_text()


def build_module(
    module: str,
    target: Path,
    model_dir: Path | None = None,
    *,
    werror: bool = True,
    extra_cflags: Sequence[str] = (),
    object_cache: Path | None = None,
    jobs: int | None = None,
    log: Callable[[str], None] | None = None,
) -> str:
    """Compile ``model_dir``'s ``*.c`` (none: the runtime alone) with the
    runtime into the extension ``module`` at ``target``.

    ``object_cache`` keeps the runtime's object files between builds (they
    depend only on the runtime, the flags and the compiler).  Returns the
    compiler's warnings (empty when there were none); raises
    :class:`BuildFailed` with the compiler's output on an error.
    """
    target = Path(target)
    table = find_table(Path(model_dir)) if model_dir is not None else None
    build_id = source_hash(model_dir, werror, extra_cflags)
    cc = compiler()
    flags = [*CFLAGS, *(["-Werror"] if werror else []), *extra_cflags]
    py_inc = sysconfig.get_paths()["include"]
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="seer-build-") as tmp:
        tmpd = Path(tmp)
        glue = tmpd / f"{module.rsplit('.', 1)[-1]}.c"
        glue.write_text(_glue_source(module, table, build_id))
        jobs_list: list[tuple[list[str], Path, Path]] = []  # (cmd, object, cached copy)
        rt_key = hashlib.sha256(
            (" ".join(cc + flags) + source_hash(None, werror, extra_cflags)).encode()
        ).hexdigest()[:24]
        objects: list[Path] = []
        for src in runtime_sources():
            obj = tmpd / f"rt_{src.stem}.o"
            cached = object_cache / rt_key / obj.name if object_cache else None
            objects.append(obj)
            if cached is not None and cached.is_file():
                shutil.copyfile(cached, obj)
                continue
            jobs_list.append(([*cc, *flags, f"-I{INCLUDE}", "-c", str(src), "-o", str(obj)],
                              obj, cached or obj))
        for src in model_sources(Path(model_dir)) if model_dir is not None else []:
            obj = tmpd / f"model_{src.stem}.o"
            objects.append(obj)
            # a model sees the public header and its own folder, nothing else
            jobs_list.append(([*cc, *flags, f"-I{INCLUDE}", f"-I{Path(model_dir).resolve()}",
                               "-c", str(src.resolve()), "-o", str(obj)], obj, obj))
        gobj = tmpd / "glue.o"
        objects.append(gobj)
        jobs_list.append(([*cc, *CFLAGS, f"-I{RUNTIME}", f"-I{INCLUDE}", f"-I{py_inc}", "-c",
                           str(glue), "-o", str(gobj)], gobj, gobj))
        if log:
            log(f"compiling {len(jobs_list)} file(s) for {module}")
        workers = jobs or os.cpu_count() or 1
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_run, cmd) for cmd, _, _ in jobs_list]
            errors = []
            for fut, (_, obj, keep) in zip(futures, jobs_list, strict=True):
                try:
                    out = fut.result()
                except BuildFailed as exc:
                    errors.append(exc)
                    continue
                if out:
                    warnings.append(out)
                if keep != obj:
                    keep.parent.mkdir(parents=True, exist_ok=True)
                    part = keep.with_suffix(f".{os.getpid()}.part")
                    shutil.copyfile(obj, part)
                    os.replace(part, keep)
            if errors:
                raise BuildFailed(
                    f"compiling {module} failed", "\n".join(e.log for e in errors),
                    errors[0].command,
                )
        out_tmp = tmpd / f"out{ext_suffix()}"
        link = [*cc, *[str(o) for o in objects], *LDFLAGS, "-o", str(out_tmp), "-lm", "-ldl"]
        out = _run(link)
        if out:
            warnings.append(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + f".{os.getpid()}.part")
        shutil.copyfile(out_tmp, part)
        os.replace(part, target)
    return "\n".join(warnings)
