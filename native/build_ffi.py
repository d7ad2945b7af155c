"""cffi builder for ``seer_env._native``.

Compiles the runtime (``native/src``) and every model under ``envs/<name>/``
into one extension module.  A model is registered by its folder alone: its
``*.c`` files are compiled, its ``<name>.h`` is included and its
``<name>.cdef`` declares its config struct (the ``seer_model_<name>`` table
is reached through a generated ``seer_model_ptr_<name>()``).
Models see only ``native/include`` (the public header) and their own folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "native"
ENVS = ROOT / "envs"


def _rel(p: Path) -> str:
    # relative for setuptools; absolute for out-of-tree variant builds
    # (ffibuilder.compile(tmpdir=...) runs the compiler inside tmpdir)
    if os.environ.get("SEER_BUILD_ABS") == "1":
        return str(p)
    return os.path.relpath(p, ROOT)


def _models() -> list[Path]:
    return sorted(d for d in ENVS.iterdir() if (d / f"{d.name}.cdef").is_file())


CFLAGS = [
    "-std=c11",
    "-O2",
    "-ffp-contract=off",
    "-fno-strict-aliasing",
    # only the module's init function is exported: calls between the runtime
    # and the models are direct (no PLT), a few percent per event
    "-fvisibility=hidden",
    "-pthread",
    "-Wall",
    "-Wextra",
]
if os.environ.get("SEER_NO_WERROR") != "1":
    CFLAGS.append("-Werror")
# Extra flags for variant builds, e.g. SEER_CFLAGS_EXTRA=-DSEER_NO_TRACE (the
# tracing-compiled-out build of ``seer-env bench trace-overhead``).
CFLAGS += os.environ.get("SEER_CFLAGS_EXTRA", "").split()

ffibuilder = FFI()
cdef = (NATIVE / "seer_cdef.h").read_text()
for d in _models():
    cdef += "\n" + (d / f"{d.name}.cdef").read_text()
    cdef += f"\nconst seer_model *seer_model_ptr_{d.name}(void);\n"
ffibuilder.cdef(cdef)

preamble = [
    # cffi's generated glue is not ours to keep -Wextra clean; the runtime and
    # models are separate translation units compiled with every warning on.
    "#pragma GCC diagnostic ignored \"-Wunused-parameter\"",
    "#pragma GCC diagnostic ignored \"-Wsign-compare\"",
    '#include "seer_runtime.h"',
    "static int seer_sizes_action_kind(const seer_sizes *s) { return (int)s->action_kind; }",
    "static const char *seer_model_info_name(const seer_model *m, uint32_t i)"
    " { return m->info_names ? m->info_names[i] : \"\"; }",
    "static const char *seer_model_name_of(const seer_model *m) { return m->name; }",
    "static size_t seer_model_config_size(const seer_model *m) { return m->config_size; }",
]
sources = [_rel(p) for p in sorted((NATIVE / "src").glob("*.c"))]
include_dirs = [_rel(NATIVE / "include")]
for d in _models():
    preamble.append(f'#include "{d.name}.h"')
    preamble.append(
        f"static const seer_model *seer_model_ptr_{d.name}(void)"
        f" {{ return &seer_model_{d.name}; }}"
    )
    sources += [_rel(p) for p in sorted(d.glob("*.c"))]
    include_dirs.append(_rel(d))

ffibuilder.set_source(
    "seer_env._native",
    "\n".join(preamble),
    sources=sources,
    include_dirs=include_dirs,
    extra_compile_args=CFLAGS,
    extra_link_args=["-pthread", "-lm"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
