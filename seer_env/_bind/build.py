"""Compile seer model extensions: the runtime and one model in one cffi module.

Every model reaches Python the same way, shipped or not: its folder's C
sources are compiled together with the runtime (``native/runtime``) and a
generated cffi glue into one extension module whose functions are the
runtime's host API (``seer_runtime.h``) plus ``seer_model_table()``, which
returns the model's table.  Calls between the runtime and the model are
direct calls inside one shared object, exactly as if the model were compiled
into the package.

Two callers use it, in the same way: ``setup.py`` builds the shipped models
(and ``seer_env._core``, the runtime without a model, for models made at run
time) when the package is installed, and [`seer_env.sdk`][seer_env.sdk] builds users'
models into a cache.  Only the standard library and cffi are imported, so
``setup.py`` can load this file by path before ``seer_env`` is installed.

Layouts are never copied by hand: the cffi declarations are the public
headers themselves, with the C-only parts filtered out (`cdef`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import hashlib
import io
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

#: The package's folder (``seer_env/``; this file is in its ``_bind/``).
PKG = Path(__file__).resolve().parent.parent


def _mapped(name: str) -> Path:
    # the same rule as seer_env._paths (this file is loaded alone by setup.py):
    # an installed wheel holds native/ inside the package, the source tree beside it
    inside = PKG / name
    return inside if inside.is_dir() else PKG.parent / name


INCLUDE = _mapped("native") / "include"
RUNTIME = _mapped("native") / "runtime"

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
#: wrappers (native/runtime/check.c) that report them in checking mode and forward
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


#: The environment variable naming the build cache (``seer_env._bind.loader.cache_dir``).
CACHE_VAR = "SEER_ENV_CACHE"


class CacheUnwritable(BuildFailed):
    """A build could not be written where it belongs (``path``): a read-only
    cache, a cache path that is a file, no permission, a full disk."""

    def __init__(self, path: Path, error: OSError, cache: Path | None = None,
                 what: str = "") -> None:
        self.path = Path(path)
        self.error = error
        where = Path(cache) if cache is not None else self.path.parent
        why = error.strerror or str(error)
        if error.filename:
            why += f": {error.filename}"
        try:  # a name too long, a folder not searchable: say it cannot be written
            is_file = where.exists() and not where.is_dir()
        except OSError:
            is_file = False
        kind = "is a file, not a folder" if is_file else "cannot be written"
        need = f"; {what} must be built there" if what else ""
        super().__init__(
            f"the build cache {where} {kind} ({why}){need}. Set {CACHE_VAR} to a writable "
            f"folder (e.g. `export {CACHE_VAR}=$HOME/.cache/seer_env`), or build the model "
            "once where the cache can be written")


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
    """The C compiler: ``$CC``, else the one Python was built with, else ``cc``
    (else ``gcc``, else ``clang``).  A ``$CC`` set (not blank) that is no
    command line or names no program found is a `BuildFailed` naming it,
    never replaced by another compiler behind the user's back."""
    user = os.environ.get("CC", "")
    try:
        cmd = shlex.split(user) if user.strip() else []
    except ValueError as exc:  # an unclosed quote
        raise BuildFailed(f"CC={user!r} is no command line ({exc}): set CC to a C "
                          "compiler, e.g. `export CC=gcc`, or unset it") from None
    if cmd:
        if not shutil.which(cmd[0]):
            raise BuildFailed(f"CC={user!r}: no program {cmd[0]!r} found: set CC to a C "
                              "compiler on PATH, e.g. `export CC=gcc`, or unset it")
        return cmd
    cmd = shlex.split(sysconfig.get_config_var("CC") or "cc") or ["cc"]
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
    refresh_objects: bool = False,
    stamp: bool = False,
    jobs: int | None = None,
    log: Callable[[str], None] | None = None,
) -> str:
    """Compile ``model_dir``'s ``*.c`` (none: the runtime alone) with the
    runtime into the extension ``module`` at ``target``.

    ``object_cache`` keeps the runtime's object files between builds (they
    depend only on the runtime, the flags and the compiler); each one is
    checked against its stamp before use (`read_verified`), and one
    that does not match is compiled again and replaced.  ``refresh_objects``
    compiles them all again (and replaces the cached ones).  ``stamp``
    writes ``target``'s stamp beside it (`publish`).  Returns the
    compiler's warnings (empty when there were none); raises
    `BuildFailed` with the compiler's output on an error, and
    `CacheUnwritable` when ``target`` cannot be written.
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
            if cached is not None and not refresh_objects:
                data = read_verified(cached)
                if data is not None:
                    obj.write_bytes(data)
                    continue
                if log and cached.exists():
                    log(f"{cached} does not match its stamp: compiling it again")
            jobs_list.append(([*cc, *flags, f"-I{INCLUDE}", "-c", str(src), "-o", str(obj)],
                              obj, cached or obj))
        for src in model_sources(Path(model_dir)) if model_dir is not None else []:
            obj = tmpd / f"model_{src.stem}.o"
            objects.append(obj)
            # a model sees the public header and its own folder, nothing else
            # (model_dir is set: the loop runs only then)
            jobs_list.append(([*cc, *flags, f"-I{INCLUDE}",
                               f"-I{Path(cast(Path, model_dir)).resolve()}",
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
                    try:
                        publish(obj, keep)
                    except OSError as exc:  # the object cache only saves time
                        if log:
                            log(f"could not keep {keep} in the object cache: {exc}")
            if errors:
                # each failure's message with its output (a compiler that
                # could not run has no output), once each
                raise BuildFailed(
                    f"compiling {module} failed",
                    "\n".join(dict.fromkeys(str(e) for e in errors)), errors[0].command,
                )
        out_tmp = tmpd / f"out{ext_suffix()}"
        link = [*cc, *[str(o) for o in objects], *LDFLAGS, "-o", str(out_tmp), "-lm", "-ldl"]
        out = _run(link)
        if out:
            warnings.append(out)
        try:
            publish(out_tmp, target, stamp=stamp)
        except OSError as exc:
            raise CacheUnwritable(target, exc) from None
    return "\n".join(warnings)


# -- files checked against their stamps ----------------------------------------
#
# Every file kept between builds (a model's module in the cache, a runtime
# object in the object cache) has a stamp beside it, ``<file>.sha256``: the
# SHA-256 and the size of its bytes.  Both are written by `publish`,
# each into a temporary file in the same folder that is then renamed over
# the old one, so a reader sees a whole file, old or new, never a partial
# one; a file is used only when it matches its stamp.  A file cut short, a
# zero-length or garbage one, one without a stamp: each is built again
# instead (a truncated shared object, loaded, would crash the interpreter
# with SIGBUS).

STAMP_SUFFIX = ".sha256"


def stamp_path(path: Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + STAMP_SUFFIX)


def _stamp_text(data: bytes) -> str:
    return f"{hashlib.sha256(data).hexdigest()} {len(data)}\n"


def _checked(path: Path) -> tuple[bytes | None, str | None]:
    """``(bytes, None)`` when ``path`` matches its stamp, else ``(None, why not)``."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    try:
        want = stamp_path(path).read_text().split()
    except (OSError, UnicodeDecodeError):
        return None, f"no stamp ({stamp_path(path).name}) to check it against"
    if len(want) != 2 or not want[1].isdigit():
        return None, f"its stamp {stamp_path(path).name} is malformed"
    if int(want[1]) != len(data):
        return None, f"{len(data)} bytes where {want[1]} were written (cut short or replaced)"
    if hashlib.sha256(data).hexdigest() != want[0]:
        return None, "its content does not match its stamp (corrupted)"
    return data, None


def read_verified(path: Path) -> bytes | None:
    """The bytes of ``path`` if it matches its stamp, else None."""
    return _checked(path)[0]


def stamp_problem(path: Path) -> str | None:
    """None when ``path`` matches its stamp, else why it does not."""
    return _checked(path)[1]


def _write_atomic(dest: Path, data: bytes, mode: int) -> None:
    fd, part = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())  # whole on disk before it gets the name
        os.chmod(part, mode)
        os.replace(part, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


def publish(src: Path, dest: Path, stamp: bool = True) -> None:
    """Put a copy of ``src`` at ``dest`` atomically (its mode too) and, with
    ``stamp``, its stamp beside it, written the same way after it."""
    src, dest = Path(src), Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_dir() and not dest.is_symlink():
        # a folder under a cache entry's name (no file can replace it): the
        # name is the cache's, so the folder goes
        shutil.rmtree(dest)
    data = src.read_bytes()
    mode = stat.S_IMODE(os.stat(src).st_mode)
    _write_atomic(dest, data, mode)
    if stamp:
        _write_atomic(stamp_path(dest), _stamp_text(data).encode(), mode & 0o666)


# -- the build cache --------------------------------------------------------------


def module_stem(model_dir: Path | None) -> str:
    """The model part of a cached module's name: the folder's name with every
    character but ASCII letters, digits and ``_`` as ``_`` (an extension's
    name must be ASCII: its init function is the C symbol ``PyInit_<name>``)."""
    if model_dir is None:
        return "core"
    return re.sub(r"[^A-Za-z0-9_]", "_", Path(model_dir).name) or "model"


@contextlib.contextmanager
def _cache_lock(path: Path) -> Iterator[bool]:
    """Hold the cache's lock file ``path`` (an exclusive flock); yields False
    without holding anything where the cache cannot be written (a read-only
    cache: only valid builds can be used there, and nobody writes them)."""
    fh = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")  # noqa: SIM115 - closed below
    except OSError:
        fh = None
    if fh is None:
        yield False
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def load_cached(
    cache: Path,
    model_dir: Path | None,
    want: str,
    import_file: Callable[[str, Path], Any],
    *,
    werror: bool = True,
    extra_cflags: Sequence[str] = (),
    rebuild: bool = False,
    log: Callable[[str], None] | None = None,
) -> tuple[Any, str]:
    """The module of ``model_dir`` (None: the runtime alone) built from the
    sources whose `source_hash` is ``want``, from the build cache
    ``cache`` or built into it; returns ``(module, "cache" | "built")``.

    Under the build's lock file, the cached module is imported (with
    ``import_file(name, path)``, once per process: ``sys.modules``) only if it
    matches its stamp; one that does not, or that does not import, is built
    again, once, and the new one imported.  ``rebuild`` builds it (and the
    runtime's objects) again in any case.  A cache that cannot be written
    still serves the valid builds it holds.  Raises `BuildFailed` (the
    message names the model and the file), `CacheUnwritable` when a
    build is needed and the cache cannot take it.
    """
    cache = Path(cache)
    stem = module_stem(model_dir)
    key = f"{stem}-{want[:16]}"
    name = f"_seer_{stem}_{want[:16]}"
    target = cache / "models" / key / f"{name}{ext_suffix()}"
    what = str(model_dir) if model_dir is not None else "the runtime"

    def load(again: bool = False) -> Any:
        mod = sys.modules.get(name)
        if mod is not None:
            return mod
        if not again:
            mod = import_file(name, target)
        else:
            # The file at this path failed to import in this process: the
            # dynamic loader may keep it loaded under this path's name and
            # would hand it out again.  The new file is imported through a
            # name of its own, a hard link removed at once (the mapping stays).
            alias = target.with_name(f".{name}.{os.getpid()}.again{ext_suffix()}")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(alias)
            os.link(target, alias)
            try:
                mod = import_file(name, alias)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(alias)
            mod.__file__ = str(target)
        sys.modules[name] = mod
        return mod

    with _cache_lock(cache / "locks" / f"{key}.lock"):
        problem = None if rebuild else stamp_problem(target)
        import_failed = False
        if not rebuild and problem is None:
            try:
                return load(), "cache"
            except ImportError as exc:
                problem = f"it does not import: {exc}"
                import_failed = True
        damaged = problem is not None and problem != "missing"
        if log:
            log(f"the cached build {target} is unusable ({problem}): building it again"
                if damaged else f"building {what} -> {target}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not os.access(target.parent, os.W_OK):
                raise PermissionError(13, os.strerror(13), str(target.parent))
        except OSError as exc:
            raise CacheUnwritable(target, exc, cache, what) from None
        try:
            warnings = build_module(name, target, model_dir, werror=werror,
                                    extra_cflags=extra_cflags, object_cache=cache / "objects",
                                    refresh_objects=rebuild, stamp=True, log=log)
        except CacheUnwritable as exc:
            raise CacheUnwritable(target, exc.error, cache, what) from None
        except BuildFailed as exc:
            if not damaged:
                raise
            raise BuildFailed(f"the cached build {target} of {what} was unusable ({problem}) "
                              f"and building it again failed: {exc.args[0]}",
                              exc.log, exc.command) from None
        if warnings and log:
            log(warnings)
        try:
            return load(again=import_failed), "built"
        except (ImportError, OSError) as exc:
            raise BuildFailed(f"{target}, just built from {what}, does not import: {exc}"
                              ) from None
