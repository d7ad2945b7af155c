"""Hostile use of the model SDK's build cache and of model names.

The cache (``$SEER_ENV_CACHE``) holds each built model's module with a stamp
beside it (size and SHA-256, ``_build.publish``) and the runtime's object
files, stamped the same way.  Each test works on its own copy of a cache
built once for this file (never on the cache the rest of the suite uses)
and loads models in a fresh interpreter: a damaged module, loaded, may kill
the interpreter (SIGBUS), and a process imports a model once.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seer_env import cli, registry, sdk
from seer_env._bind import build as _build
from seer_env.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "models"

#: Loads the model folder argv[1], prints where it came from and its table's name.
LOAD = """
import sys
from seer_env import sdk
from seer_env.errors import BuildError
lines = []
try:
    m = sdk.build(sys.argv[1], rebuild=len(sys.argv) > 2, log=lines.append)
except BuildError as exc:
    print("BuildError", exc.args[0].splitlines()[0])
    raise SystemExit(3)
print("WHERE", m._where, m.native.name)
for line in lines:
    print("LOG", line.splitlines()[0] if line else "")
"""


def run(code: str, cache: Path, *args: str, prefix: tuple[str, ...] = (),
        env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    e = dict(os.environ, SEER_ENV_CACHE=str(cache), PYTHONPATH=str(ROOT))
    e.update(env or {})
    return subprocess.run([*prefix, sys.executable, "-c", textwrap.dedent(code), *args],
                          env=e, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def load(cache: Path, folder: Path, *, rebuild: bool = False, **kw) -> subprocess.CompletedProcess:
    return run(LOAD, cache, str(folder), *(["rebuild"] if rebuild else []), **kw)


def out(r: subprocess.CompletedProcess) -> str:
    return f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-3000:]}"


def where(r: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("WHERE ")]
    assert len(lines) == 1, out(r)
    return lines[0]


def module_file(cache: Path, stem: str) -> Path:
    (so,) = (cache / "models").glob(f"{stem}-*/_seer_{stem}_*{_build.ext_suffix()}")
    return so


def variant(where: Path, name: str, declared: str | None = None) -> Path:
    """A copy of the probe model named ``name`` (its own sources: its own build)."""
    folder = where / name
    shutil.copytree(MODELS / "probe", folder)
    with open(folder / "probe.c", "a") as fh:
        fh.write(f"/* variant {name} */\n")
    if declared:
        (folder / "__init__.py").write_text(
            f"from seer_env.sdk import declare\nMODEL = declare(__name__, name={declared!r})\n")
    return folder


def objects(cache: Path) -> list[Path]:
    found = sorted((cache / "objects").glob("*/rt_*.o"))
    assert found, f"no cached objects in {cache}"
    return found


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache with the runtime's objects and the probe model built."""
    cache = tmp_path_factory.mktemp("warm") / "cache"
    r = load(cache, MODELS / "probe")
    assert where(r) == "WHERE built probe", out(r)
    return cache


@pytest.fixture
def cache(warm_cache: Path, tmp_path: Path) -> Path:
    c = tmp_path / "cache"
    shutil.copytree(warm_cache, c)
    return c


# ---- 5. a damaged cached module is rebuilt, never loaded ------------------------


@pytest.mark.parametrize("damage", ["half", "empty", "garbage", "no stamp", "a folder"])
def test_a_damaged_cached_module_is_rebuilt_once_and_loads(cache: Path, damage: str) -> None:
    so = module_file(cache, "probe")
    good = so.read_bytes()
    if damage == "a folder":  # its rebuild blamed the whole cache: "cannot be written"
        so.unlink()
        (so / "junk").mkdir(parents=True)
    elif damage == "half":
        so.write_bytes(good[: len(good) // 2])  # loaded, this killed the interpreter (SIGBUS)
    elif damage == "empty":
        so.write_bytes(b"")
    elif damage == "garbage":
        so.write_bytes(b"\x7fELF" + os.urandom(4096))
    else:
        _build.stamp_path(so).unlink()
    r = load(cache, MODELS / "probe")
    assert r.returncode == 0, out(r)
    assert where(r) == "WHERE built probe", out(r)
    assert f"LOG the cached build {so} is unusable" in r.stdout, out(r)
    assert _build.stamp_problem(so) is None
    # and the rebuilt one is used as it is from now on
    r = load(cache, MODELS / "probe")
    assert where(r) == "WHERE cache probe", out(r)


def test_a_cached_module_that_does_not_import_is_rebuilt(cache: Path) -> None:
    # a whole, stamped shared object that is no extension module: ImportError
    so = module_file(cache, "probe")
    libm = next(p for p in (Path("/lib/x86_64-linux-gnu/libm.so.6"), Path("/usr/lib/libm.so.6"),
                            Path("/lib64/libm.so.6")) if p.is_file())
    _build.publish(libm, so)
    assert _build.stamp_problem(so) is None
    r = load(cache, MODELS / "probe")
    assert where(r) == "WHERE built probe", out(r)
    assert f"LOG the cached build {so} is unusable (it does not import" in r.stdout, out(r)


def test_a_damaged_module_whose_rebuild_fails_raises_build_error(cache: Path) -> None:
    so = module_file(cache, "probe")
    so.write_bytes(so.read_bytes()[:1000])
    r = load(cache, MODELS / "probe", env={"CC": "false"})
    assert r.returncode == 3, out(r)
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"BuildError building {MODELS / 'probe'} failed: the cached build "
                            f"{so} of {MODELS / 'probe'} was unusable ("), out(r)
    assert "and building it again failed: compiling _seer_probe_" in first, out(r)


def test_a_failed_compile_says_why_even_without_compiler_output(cache: Path) -> None:
    """A compiler that fails silently (CC=false), or that cannot be run at
    all (too many open files), gave a BuildError of blank lines: each
    failure's message was dropped and only its (empty) output kept."""
    module_file(cache, "probe").write_bytes(b"")
    code = LOAD.replace('exc.args[0].splitlines()[0]', 'str(exc).replace("\\n", " | ")')
    r = run(code, cache, str(MODELS / "probe"), env={"CC": "false"})
    assert r.returncode == 3, out(r)
    assert "compiling _seer_probe_" in r.stdout and "false failed (exit 1)" in r.stdout, out(r)
    assert r.stdout.count("false failed (exit 1)") == 1, out(r)  # once, not per file


@pytest.mark.parametrize("cc,why", [
    ('gcc "-O2', "is no command line (No closing quotation)"),
    ("/no/such/cc -O2", "no program '/no/such/cc' found"),
])
def test_a_bad_cc_is_a_build_error_naming_it(monkeypatch: pytest.MonkeyPatch, cc: str,
                                             why: str) -> None:
    """CC with an unclosed quote raised ValueError; CC naming no program was
    silently replaced by another compiler.  A blank CC is unset (IndexError
    before)."""
    monkeypatch.setenv("CC", cc)
    with pytest.raises(_build.BuildFailed) as info:
        _build.compiler()
    assert f"CC={cc!r}" in str(info.value) and why in str(info.value)
    monkeypatch.setenv("CC", "   ")
    assert shutil.which(_build.compiler()[0])
    monkeypatch.setenv("CC", "cc -O1")
    assert _build.compiler() == ["cc", "-O1"]


def test_an_unwritable_cache_with_a_name_too_long_says_so() -> None:
    """Checking whether the cache is a file raised ENAMETOOLONG out of the
    error's own constructor."""
    where = Path("/tmp") / ("x" * 300)
    err = OSError(errno.ENAMETOOLONG, "File name too long", str(where / "m.so"))
    exc = _build.CacheUnwritable(where / "m.so", err)
    assert str(exc).startswith(f"the build cache {where} cannot be written (File name too "
                               "long: ")


def test_load_cached_rebuilds_at_most_once() -> None:
    calls = []

    def never_imports(name: str, path: Path) -> None:
        calls.append(("import", path))
        raise ImportError("no")

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        c = Path(tmp)
        real = _build.build_module

        def fake_build(name, target, *a, **kw):
            calls.append(("build", target))
            target.parent.mkdir(parents=True, exist_ok=True)
            src = c / "src.so"
            src.write_bytes(b"module")
            _build.publish(src, target)
            return ""

        _build.build_module = fake_build
        try:
            with pytest.raises(_build.BuildFailed, match="just built from the runtime, does "
                                                        "not import: no"):
                _build.load_cached(c, None, "0" * 32, never_imports)
            calls.clear()
            with pytest.raises(_build.BuildFailed, match="does not import"):
                _build.load_cached(c, None, "0" * 32, never_imports)
        finally:
            _build.build_module = real
        target = calls[0][1]
        # a valid cached file that does not import: one rebuild, one more
        # import (through a link of its own, removed at once)
        assert [c[0] for c in calls] == ["import", "build", "import"]
        assert calls[1][1] == target and calls[2][1].parent == target.parent
        assert calls[2][1].name.startswith(f".{target.name.split('.')[0]}.")
        assert sorted(p.name for p in target.parent.iterdir()) == [
            target.name, target.name + ".sha256"]


def test_publish_replaces_a_file_whole_or_not_at_all(tmp_path: Path, monkeypatch) -> None:
    dest = tmp_path / "m.so"
    (tmp_path / "old").write_bytes(b"old" * 1000)
    _build.publish(tmp_path / "old", dest)
    (tmp_path / "new").write_bytes(b"new" * 5000)

    def fail(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space"):
        _build.publish(tmp_path / "new", dest)
    monkeypatch.undo()
    assert dest.read_bytes() == b"old" * 1000 and _build.stamp_problem(dest) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.so", "m.so.sha256", "new", "old"]
    _build.publish(tmp_path / "new", dest)
    assert _build.read_verified(dest) == b"new" * 5000


# ---- 6. the object cache: checked before use; --rebuild bypasses it -------------


@pytest.mark.parametrize("damage", ["garbage", "half", "no stamp"])
def test_a_damaged_cached_object_is_compiled_again(cache: Path, tmp_path: Path,
                                                   damage: str) -> None:
    obj = objects(cache)[3]
    good = obj.read_bytes()
    if damage == "garbage":
        obj.write_bytes(os.urandom(len(good)))
    elif damage == "half":
        obj.write_bytes(good[: len(good) // 2])
    else:
        _build.stamp_path(obj).unlink()
    # every model builds, not only the one first built after the damage
    r = load(cache, variant(tmp_path, "probe_a"))
    assert where(r) == "WHERE built probe", out(r)
    assert f"LOG {obj} does not match its stamp: compiling it again" in r.stdout, out(r)
    # that object compiled again (with the model and the glue), the others cached
    assert "LOG compiling 3 file(s) for _seer_probe_a_" in r.stdout, out(r)
    assert _build.read_verified(obj) is not None
    r = load(cache, variant(tmp_path, "probe_b"))
    assert where(r) == "WHERE built probe", out(r)
    assert "LOG compiling 2 file(s) for _seer_probe_b_" in r.stdout, out(r)


def test_rebuild_compiles_the_runtime_objects_again(cache: Path, tmp_path: Path) -> None:
    # an object that matches its stamp but is broken (a faulty compiler, a
    # stamp written over a bad file): only --rebuild gets past it
    obj = objects(cache)[0]
    bad = cache / "bad"
    bad.write_bytes(b"not an object file")
    _build.publish(bad, obj)
    bad.unlink()
    a = variant(tmp_path, "probe_a")
    r = load(cache, a)
    assert r.returncode == 3 and r.stdout.startswith(f"BuildError building {a} failed"), out(r)
    r = run("import sys; from seer_env import cli; raise SystemExit(cli.main(sys.argv[1:]))",
            cache, "build", str(a), "--rebuild", "--quiet")
    assert r.returncode == 0, out(r)
    assert r.stdout.startswith("probe_a: model 'probe' built: "), out(r)
    assert _build.read_verified(obj) not in (None, b"not an object file")
    # the cache is good again for every build
    r = load(cache, variant(tmp_path, "probe_b"))
    assert where(r) == "WHERE built probe", out(r)
    assert "LOG compiling 2 file(s) for _seer_probe_b_" in r.stdout, out(r)


# ---- 10. a cache that cannot be written ----------------------------------------


def test_a_cache_path_that_is_a_file_gives_a_build_error(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file\n")
    r = load(not_a_folder, MODELS / "probe")
    assert r.returncode == 3, out(r)
    line = r.stdout.splitlines()[0]
    assert line.startswith(f"BuildError building {MODELS / 'probe'} failed: the build cache "
                           f"{not_a_folder} is a file, not a folder"), out(r)
    assert "Set SEER_ENV_CACHE to a writable folder" in line, out(r)
    assert not_a_folder.read_text() == "a file\n"


def _ro_mount_works(probe: Path) -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe.mkdir()
    r = subprocess.run(["unshare", "-m", "sh", "-c",
                        f"mount --bind {probe} {probe} && mount -o remount,ro,bind {probe} "
                        f"{probe} && ! touch {probe}/x 2>/dev/null"], capture_output=True)
    return r.returncode == 0 and not (probe / "x").exists()


#: Runs a command with $SEER_ENV_CACHE mounted read-only (a mount namespace of its own).
RO_PREFIX = ("unshare", "-m", "sh", "-c",
             'mount --bind "$SEER_ENV_CACHE" "$SEER_ENV_CACHE" && '
             'mount -o remount,ro,bind "$SEER_ENV_CACHE" "$SEER_ENV_CACHE" && exec "$@"', "sh")

#: Without mount namespaces: every write under $SEER_ENV_CACHE fails as on a
#: read-only file system (every way the SDK writes files goes through these).
RO_PATCH = """
import builtins, errno, io, os
_root = os.path.realpath(os.environ["SEER_ENV_CACHE"])
def _under(p):
    try:
        return os.path.realpath(os.fspath(p)).startswith(_root)
    except TypeError:
        return False
def _ro(p):
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(p))
def _guard(fn, writes=lambda *a, **k: True):
    def g(p, *a, **k):
        if _under(p) and writes(*a, **k):
            _ro(p)
        return fn(p, *a, **k)
    return g
_wmode = lambda mode="r", *a, **k: any(c in mode for c in "wax+")
_wflags = lambda flags, *a, **k: flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
builtins.open = io.open = _guard(builtins.open, _wmode)
os.open = _guard(os.open, _wflags)
for _n in ("mkdir", "unlink", "chmod", "rmdir"):
    setattr(os, _n, _guard(getattr(os, _n)))
_rep = os.replace
os.replace = lambda a, b, *x, **k: _ro(b) if _under(b) else _rep(a, b, *x, **k)
os.rename = os.replace
_acc = os.access
os.access = lambda p, m, *a, **k: False if _under(p) and m & os.W_OK else _acc(p, m, *a, **k)
"""


def test_a_read_only_cache_serves_its_builds_and_refuses_new_ones(cache: Path,
                                                                  tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    if _ro_mount_works(tmp_path / "probe"):
        def ro_load(folder: Path) -> subprocess.CompletedProcess:
            return load(cache, folder, prefix=RO_PREFIX)
    else:  # pragma: no cover - depends on the machine
        def ro_load(folder: Path) -> subprocess.CompletedProcess:
            return run(RO_PATCH + LOAD, cache, str(folder))
    r = ro_load(MODELS / "probe")
    assert r.returncode == 0, out(r)
    assert where(r) == "WHERE cache probe", out(r)
    a = variant(tmp_path, "probe_a")
    r = ro_load(a)
    assert r.returncode == 3, out(r)
    line = r.stdout.splitlines()[0]
    assert line.startswith(f"BuildError building {a} failed: the build cache "
                           f"{cache} cannot be written (Read-only file system"), out(r)
    assert f"{a} must be built there. Set SEER_ENV_CACHE to a writable" in line, out(r)
    after = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    assert after == before


def test_an_unwritable_object_cache_only_costs_time(cache: Path) -> None:
    # objects cannot be kept, the module can: the build still succeeds
    shutil.rmtree(cache / "objects")
    (cache / "objects").write_text("in the way\n")
    r = load(cache, variant(cache.parent, "probe_a"))
    assert where(r) == "WHERE built probe", out(r)
    assert "LOG could not keep" in r.stdout, out(r)


# ---- 11. model names: one rule, ASCII identifiers -------------------------------


@pytest.mark.parametrize("name", ["café", "模型", "naïve_v0", "x\u200b", "my-model", "1st", ""])
def test_model_names_must_be_ascii_identifiers(name: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must be an ASCII identifier: letters a-z"):
        registry.check_name(name)
    with pytest.raises(ConfigError, match="must be an ASCII identifier"):
        sdk.new(name, tmp_path)
    assert list(tmp_path.iterdir()) == []
    if name:  # (no name: the folder's)
        with pytest.raises(ConfigError, match="must be an ASCII identifier"):
            sdk.Model(tmp_path, name)


def test_cli_new_refuses_a_non_ascii_name_without_a_traceback(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "seer_env.cli", "new", "café", "--dir",
                        str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("seer-env: ConfigError: model name 'café' "), r.stderr
    assert "must be an ASCII identifier" in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []
    assert cli.main(["new", "cafe", "--dir", str(tmp_path)]) == 0


def test_a_non_ascii_folder_needs_a_declared_name_and_then_builds(cache: Path,
                                                                  tmp_path: Path) -> None:
    plain = tmp_path / "modèle"
    shutil.copytree(MODELS / "probe", plain)  # no declaration: the folder names the model
    with pytest.raises(ConfigError, match=r"model name 'modèle' \(the name of the folder .*: "
                                          r"rename it, or give name= in its declaration\) "
                                          r"must be an ASCII identifier"):
        sdk.Model(plain)
    declared = variant(tmp_path, "déclaré", declared="declared_m")
    r = load(cache, declared)
    assert where(r) == "WHERE built probe", out(r)  # (the C table's name)
    assert module_file(cache, "d_clar_").name.isascii()


@pytest.mark.parametrize("name", ["pcs_v0", "phold_v0"])
def test_new_refuses_a_shipped_envs_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="shipped env"):
        sdk.new(name, tmp_path)
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["class", "None", "lambda"])
def test_a_python_keyword_names_no_model(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="Python keyword"):
        sdk.new(name, tmp_path)


def test_a_loaded_model_cannot_take_a_shipped_envs_name(tmp_path: Path) -> None:
    """Shipped envs register when first imported: a model folder named like
    one, loaded first, took the name -- make("pcs_v0") returned the user's model
    and importing the shipped env failed.  In a fresh process, where pcs_v0 was
    not imported yet."""
    sdk.new("shadow", tmp_path)
    (tmp_path / "shadow").rename(tmp_path / "pcs_v0")
    code = textwrap.dedent(f"""
        import seer_env
        from seer_env.errors import ConfigError
        try:
            seer_env.sdk.load({str(tmp_path / "pcs_v0")!r})
        except ConfigError as e:
            print("refused:", e)
        from seer_env.envs import pcs_v0
        print(seer_env.make("pcs_v0").seer_model.folder.name, pcs_v0.__name__)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "refused: the model in" in out.stdout and "the name of a shipped env" in out.stdout
    assert out.stdout.strip().endswith("pcs_v0 seer_env.envs.pcs_v0")
