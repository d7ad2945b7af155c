"""The contract checker's output passes: bounds and uninitialised bytes.

`bounds_findings` reads one run's outputs (``seer_env.check.run_model``)
against what the model declares: observations outside ``obs_bounds``
(``observation_space``), global states outside ``state_bounds``
(``state_space``), and values that are not finite -- NaN anywhere, +-inf
where the bound on that side is finite, NaN or +-inf in a reward or an info
value.  Only the rows that are outputs count: at each step the agents
``active`` marks (observed by that call; the runtime zeroes the others' rows).
Bounds are exact, as for a Box: no tolerance.

`uninit_findings` runs the model itself to find bytes nobody wrote:

* **reads of uninitialised locals** (C models): the model is built twice
  more, with ``-ftrivial-auto-var-init=zero`` and with ``=pattern`` (every
  local variable of every function starts as zero bytes, or as 0xFE bytes),
  and both copies run the same serial run.  A model that never reads a local
  before writing it gives identical outputs; one that does gives outputs that
  depend on the pattern.  The first difference names the hook that made it,
  by what differs first in the order the hooks run: the snapshot records
  (``publish``), the entity states (``init`` after a reset, else ``act`` or
  ``handle``), the instance data (``boundary``), an agent's outputs
  (``observe``), the global state (``global_state``).  Records and instance
  data are read at each boundary through the first ``observe`` call.
* **elements observe never writes** (opt-in, ``unwritten=True``): observe
  and global_state run through a wrapper (a copy of the model's table whose
  two hooks are Python callbacks calling the model's): the output row is
  filled with a poison NaN pattern before the call, and every element still
  holding it afterwards is put back to 0 (what the runtime leaves there) and
  noted.  An element that no call of the run wrote, for any agent, is a
  finding; one written by some calls only is not (a one-hot observation
  writes each element sometimes and relies on the zeroed row).  It is off by
  default because leaving elements at the runtime's 0 is deterministic and
  shipped models rely on it: aircraft_v0 leaves the slots of absent
  neighbours unwritten, and with 8 UAVs the last slots stay empty for a
  whole 40-step run.

Both need no change to the runtime.  Before them, a read of an
uninitialised local showed as a ``layout``/``order``/``hidden-state``
difference with a misleading fix (stack garbage differs between runs); an
unwritten element shows nowhere (the runtime zeroes every output row before
observe, so the element is always 0: no two runs differ).
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._bind.runtime import group_action_view
from ..faces.gym_vector import random_actions as random_group_actions

#: How to fix what each rule's breach means (merged into seer_env.check.FIXES).
FIXES: dict[str, str] = {
    "obs-bounds": "keep every observation element inside the bounds obs_bounds declares "
                  "(clip it, or declare wider bounds): the observation space promises them",
    "state-bounds": "keep every global state element inside the bounds state_bounds declares "
                    "(clip it, or declare wider bounds): the state space promises them",
    "non-finite": "write finite values: NaN anywhere, and +-inf where the declared bound is "
                  "finite, break learners (look for a division by zero, log of 0, a float "
                  "overflow, or a value read before it was written)",
    "uninitialised": "write every local variable (and every element of a local array or "
                     "struct) before reading it, and every output element in every call: the "
                     "outputs depended on bytes nobody wrote",
    "pointer-state": "keep plain data in entity states, snapshot records and instance data: "
                     "an index (an entity number, an offset), never a pointer -- a snapshot "
                     "copies the bytes, and an address means nothing in another build, run "
                     "or process",
}

POISON32 = 0x7FA0DEAD  # a signalling NaN no arithmetic produces
#: The two painted builds.  -O0: optimised, GCC still treats a read before
#: any write as undefined and may fold it away (a local array's unwritten
#: element added to a state vanished from both builds at -O2).
_PATTERN_FLAGS = (("zero", ("-O0", "-ftrivial-auto-var-init=zero")),
                  ("pattern", ("-O0", "-ftrivial-auto-var-init=pattern")))


def random_actions(rng: np.random.Generator, rt: Any, spill: float = 0.0) -> np.ndarray:
    """Random actions for every agent of ``rt`` (a runtime), the checker's
    runs' actions: uniform over ``Discrete(n)``, or uniform over the Box widened
    by ``spill`` times its span on each side (out-of-range values are clipped
    by the runtime: a spill exercises that).  In ``rt.actions``' dtype.  A model
    with groups, masks or multi-discrete actions gets each group's kind, within
    the masks of the last boundary (forbidden choices would be refused)."""
    sz = rt.sizes
    if sz.num_groups == 1 and not sz.mask_dim and sz.action_kind != "multi_discrete":
        if sz.action_kind == "discrete":
            return rng.integers(0, sz.action_n, size=rt.actions.shape).astype(rt.actions.dtype)
        span = sz.action_high - sz.action_low
        a = rng.uniform(sz.action_low - spill * span, sz.action_high + spill * span,
                        size=rt.actions.shape)
        return a.astype(rt.actions.dtype)
    out = rt.actions.copy()
    views = [out] if sz.num_groups == 1 else [group_action_view(out, g) for g in sz.groups]
    B = rt.num_instances
    for g, view in zip(sz.groups, views, strict=True):
        if g.action_kind == "box":
            span = g.action_high - g.action_low
            view[...] = rng.uniform(g.action_low - spill * span, g.action_high + spill * span,
                                    size=view.shape).astype(np.float32)
            continue
        mask = rt.mask[:, g.first:g.first + g.count, :g.mask_len] if g.mask_len else None
        view[...] = random_group_actions(g, mask, B, rng).reshape(view.shape)
    return out


def _f(x: Any) -> str:
    """A float32 or float64 value, short."""
    v = float(x)
    if isinstance(x, np.floating) and x.dtype == np.float32:
        return f"{v:.8g}"
    return repr(v)


def _bound_text(lo: float, hi: float) -> str:
    return f"[{_f(np.float32(lo))}, {_f(np.float32(hi))}]"


@dataclass
class _First:
    """The first occurrence of a breach and how many there were."""

    msg: str = ""
    count: int = 0

    def add(self, n: int, msg: str) -> None:
        if n and not self.count:
            self.msg = msg
        self.count += n


def bounds_findings(native: Any, config: Mapping[str, Any], run: Any,
                    names: Sequence[str]) -> list[tuple[str, str]]:
    """Observations and global states outside the declared bounds, and
    non-finite outputs, in ``run`` (a ``seer_env.check._Run``: ``run.steps``
    step 0 after reset).  Rules ``"obs-bounds"``, ``"state-bounds"``,
    ``"non-finite"``, at most one finding each: the first occurrence (step,
    instance, agent, field and element, value and bound) and how many values
    broke the rule in the run."""
    buf, sizes = native.describe(dict(config))
    lo1, hi1, st_lo, st_hi = native.bounds(buf, sizes)
    # per agent (A, obs_dim): a model with groups has each group's bounds in
    # its agents' rows, and [0, 0] past the group's own elements (the runtime
    # zeroes them; a nonzero value there is observe writing past its row)
    obs_lo = np.broadcast_to(lo1, (sizes.num_agents, sizes.obs_dim)).copy()
    obs_hi = np.broadcast_to(hi1, (sizes.num_agents, sizes.obs_dim)).copy()
    gdim = np.full(sizes.num_agents, sizes.obs_dim)  # each agent's group's obs_dim
    if sizes.num_groups > 1:
        obs_lo[:], obs_hi[:] = 0.0, 0.0
        for gi, g in enumerate(sizes.groups):
            gdim[g.first:g.first + g.count] = g.obs_dim
            glo, ghi = native.group_bounds(buf, sizes, gi)
            obs_lo[g.first:g.first + g.count, :g.obs_dim] = glo
            obs_hi[g.first:g.first + g.count, :g.obs_dim] = ghi
    name = native.name
    first = {r: _First() for r in ("non-finite", "obs-bounds", "state-bounds")}
    order = ("obs-bounds", "state-bounds", "non-finite")

    def agent(a: int) -> str:
        return names[a] if a < len(names) else f"agent_{a}"

    for k, step in enumerate(run.steps):
        active = np.asarray(step["active"], bool)
        obs = np.asarray(step["obs"])
        # observations: rows of the agents this call observed
        if obs.size:
            rows = np.where(active[..., None], obs, np.float32(0))
            nan = np.isnan(rows)
            inf_bad = (np.isposinf(rows) & np.isfinite(obs_hi)) | (np.isneginf(rows) &
                                                                  np.isfinite(obs_lo))
            bad = nan | inf_bad
            if bad.any():
                i, a, j = (int(x) for x in np.argwhere(bad)[0])
                first["non-finite"].add(int(bad.sum()), (
                    f"step {k}, instance {i}, agent {agent(a)}, obs[{j}] = {_f(obs[i, a, j])}"
                    f" (declared bounds {_bound_text(obs_lo[a, j], obs_hi[a, j])})"))
            fin = np.isfinite(rows)
            out = fin & ((rows < obs_lo) | (rows > obs_hi))
            if out.any():
                i, a, j = (int(x) for x in np.argwhere(out)[0])
                v = obs[i, a, j]
                side = (f"below the declared low bound {_f(obs_lo[a, j])}"
                        if v < obs_lo[a, j]
                        else f"above the declared high bound {_f(obs_hi[a, j])}")
                first["obs-bounds"].add(int(out.sum()), (
                    f"step {k}, instance {i}, agent {agent(a)}, obs[{j}] = {_f(v)} is past its "
                    f"group's obs_dim={int(gdim[a])}, in the padding of its row, which stays 0 "
                    "(observe wrote past its row)" if j >= gdim[a] else
                    f"step {k}, instance {i}, agent {agent(a)}, obs[{j}] = {_f(v)} is {side} "
                    f"(declared {_bound_text(obs_lo[a, j], obs_hi[a, j])})"))
        # rewards and infos of the observed agents
        for key in ("reward", "info"):
            arr = np.asarray(step[key])
            if not arr.size:
                continue
            mask = active if arr.ndim == 2 else active[..., None]
            bad = ~np.isfinite(arr) & mask
            if bad.any():
                idx = tuple(int(x) for x in np.argwhere(bad)[0])
                elem = f"[{idx[2]}]" if len(idx) > 2 else ""
                first["non-finite"].add(int(bad.sum()), (
                    f"step {k}, instance {idx[0]}, agent {agent(idx[1])}, {key}{elem} = "
                    f"{_f(arr[idx])}"))
        # the global state of every instance
        gs = np.asarray(step["global"])
        if gs.size:
            nan = np.isnan(gs)
            bad = nan | (np.isposinf(gs) & np.isfinite(st_hi)) | (np.isneginf(gs) &
                                                                   np.isfinite(st_lo))
            if bad.any():
                i, j = (int(x) for x in np.argwhere(bad)[0])
                first["non-finite"].add(int(bad.sum()), (
                    f"step {k}, instance {i}, global state[{j}] = {_f(gs[i, j])} (declared "
                    f"bounds {_bound_text(st_lo[j], st_hi[j])})"))
            out = np.isfinite(gs) & ((gs < st_lo) | (gs > st_hi))
            if out.any():
                i, j = (int(x) for x in np.argwhere(out)[0])
                v = gs[i, j]
                side = (f"below the declared low bound {_f(st_lo[j])}" if v < st_lo[j]
                        else f"above the declared high bound {_f(st_hi[j])}")
                first["state-bounds"].add(int(out.sum()), (
                    f"step {k}, instance {i}, global state[{j}] = {_f(v)} is {side} "
                    f"(declared {_bound_text(st_lo[j], st_hi[j])})"))
    what = {"obs-bounds": "observation value(s) outside the declared bounds",
            "state-bounds": "global state value(s) outside the declared bounds",
            "non-finite": "non-finite output value(s)"}
    n_steps = len(run.steps)
    return [(r, f"model '{name}': {first[r].msg}; {first[r].count} {what[r]} in "
                f"{n_steps} step(s) of the run, the first shown")
            for r in order if first[r].count]


# -- uninitialised bytes -----------------------------------------------------------------


@dataclass
class _Watch:
    """A copy of a model's table whose observe and global_state are Python
    callbacks around the model's own: they poison the output rows and note
    which elements the model wrote, and (``capture``) keep each boundary's
    snapshot records and instance data."""

    native: Any
    capture: bool
    step: int = 0
    obs_written: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    obs_first: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    obs_calls: int = 0
    gs_written: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    gs_first: dict[int, tuple[int, int]] = field(default_factory=dict)
    gs_calls: int = 0
    seen: dict[int, tuple[bytes, bytes, bool]] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sizes: Any = None  # set by configure() before the first call
        self.wrapped = self.native.with_hooks(observe=self._observe,
                                              global_state=self._global_state,
                                              on_error=self.errors.append)

    def configure(self, sizes: Any) -> None:
        """Size the notes for a configuration's sizes."""
        self.sizes = sizes
        self.obs_written = np.zeros(sizes.obs_dim, bool)
        self.gs_written = np.zeros(sizes.state_dim, bool)

    def _observe(self, ctx: Any, agent: int, obs: np.ndarray,
                 model_observe: Callable[[], None]) -> None:
        sz = self.sizes
        inst = ctx.instance()
        if self.capture and inst not in self.seen:
            N, S, idsz = sz.num_entities, sz.snapshot_size, sz.instance_size
            snaps = b"".join(ctx.snapshot(e, (np.void, S)).tobytes() for e in range(N)) \
                if S else b""
            idata = ctx.instance_data((np.void, idsz)).tobytes() if idsz else b""
            self.seen[inst] = (snaps, idata, ctx.step_index() == 0 and ctx.now() == 0.0)
        n = sz.obs_dim
        row = obs.view(np.uint32) if n else None
        if row is not None:
            row[:] = POISON32
        model_observe()
        self.obs_calls += 1
        if row is not None:
            left = row == POISON32
            self.obs_written |= ~left
            if left.any():
                for j in np.flatnonzero(left & ~self.obs_written):
                    self.obs_first.setdefault(int(j), (self.step, inst, int(agent)))
                row[left] = 0

    def _global_state(self, ctx: Any, state: np.ndarray,
                      model_global_state: Callable[[], None]) -> None:
        n = self.sizes.state_dim
        row = state.view(np.uint32) if n else None
        if row is not None:
            row[:] = POISON32
        model_global_state()
        self.gs_calls += 1
        if row is not None:
            left = row == POISON32
            self.gs_written |= ~left
            if left.any():
                inst = ctx.instance()
                for j in np.flatnonzero(left & ~self.gs_written):
                    self.gs_first.setdefault(int(j), (self.step, inst))
                row[left] = 0


def _watched_run(watch: _Watch, config: Mapping[str, Any], steps: int, batch: int,
                 seed: int, progress: Callable[[int], None] | None = None
                 ) -> tuple[list[dict[str, Any]], BaseException | None]:
    """A serial run of the watched model (reset, random actions, masked
    resets every 17 steps, autoresets), every output of every step;
    ``progress(k)`` is called before step k (0: the reset)."""
    note = progress or (lambda k: None)
    from .._bind.runtime import Runtime
    from ..errors import SeerError

    rt = Runtime(watch.wrapped, config, batch, "serial", 1, None)
    watch.configure(rt.sizes)
    rng = np.random.default_rng(seed)
    seeds = [seed + i for i in range(batch)]
    out: list[dict[str, Any]] = []

    def grab() -> None:
        B = rt.num_instances
        out.append({
            "obs": rt.obs.copy(), "reward": rt.reward.copy(),
            "terminated": rt.terminated.copy(), "truncated": rt.truncated.copy(),
            "info": rt.info.copy(),
            "state": np.stack([np.frombuffer(rt.entity_states(i), np.uint8) for i in range(B)]),
            "global": np.stack([rt.global_state(i) for i in range(B)]),
            "seen": dict(watch.seen),
        })
        watch.seen.clear()

    try:
        watch.step = 0
        note(0)
        rt.reset(seeds)
        grab()
        for k in range(1, steps + 1):
            watch.step = k
            note(k)
            rt.actions[:] = random_actions(rng, rt)
            again = cast(np.ndarray, ~rt.alive.any(axis=1))  # (B,): one per instance
            if k % 17 == 0:
                again[k // 17 % batch] = True
            if (~again).any():
                rt.step(~again)
            if again.any():
                rt.reset([s + 7919 * k for s in seeds], again)
            grab()
    except SeerError as exc:
        return out, exc
    finally:
        rt.close()
    if watch.errors:
        raise watch.errors[0]
    return out, None


def _painted(native: Any) -> list[tuple[str, Any]] | None:
    """The model built with its locals zeroed and painted (None: not a C model
    folder, or the compiler has no -ftrivial-auto-var-init)."""
    from .._bind import build as _build
    from .._bind.loader import load_module
    from .._bind.native import NativeModel
    from ..errors import BuildError

    src = Path(native.source)
    if native.source.startswith("Python model") or not src.is_dir() or \
            not _build.model_sources(src):
        return None
    out = []
    for label, flag in _PATTERN_FLAGS:
        try:
            with unbudgeted():  # the compiler is not the model
                mod, _ = load_module(src, werror=False, extra_cflags=flag)
        except BuildError:
            return None
        out.append((label, NativeModel(mod, native.source)))
    return out


def _mapped_ranges(maps: str = "/proc/self/maps") -> list[tuple[int, int]]:
    """This process's mapped address ranges ([] where unreadable)."""
    out = []
    try:
        with open(maps) as f:
            for line in f:
                lo, _, hi = line.partition(" ")[0].partition("-")
                out.append((int(lo, 16), int(hi, 16)))
    except (OSError, ValueError):
        return []
    return out


def _pointers_at(a: bytes, b: bytes, off: int, maps: str = "/proc/self/maps"
                 ) -> tuple[int, int] | None:
    """The aligned 8-byte words around byte ``off`` of ``a`` and ``b`` (two
    builds' copies of one record) where both are addresses this process maps,
    and differ: a pointer the model keeps (uninitialised bytes read as 0 in
    one build and 0xFE.. in the other, never as two mapped addresses); None
    otherwise."""
    w = off - off % 8
    if w + 8 > min(len(a), len(b)):
        return None
    x, y = (int.from_bytes(v[w:w + 8], sys.byteorder) for v in (a, b))
    if x == y:
        return None
    ranges = _mapped_ranges(maps)
    if all(any(lo <= v < hi for lo, hi in ranges) for v in (x, y)):
        return x, y
    return None


def _differs(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape != b.shape or a.tobytes() != b.tobytes()


def _first_index(a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
    ua = a.view(np.uint8).reshape(a.shape + (-1,)) if a.dtype.kind == "f" else a
    ub = b.view(np.uint8).reshape(b.shape + (-1,)) if b.dtype.kind == "f" else b
    neq = ua != ub
    if a.dtype.kind == "f":
        neq = neq.any(axis=-1)
    return tuple(int(x) for x in np.argwhere(neq)[0])


def _read_difference(native: Any, zs: list[dict[str, Any]], ps: list[dict[str, Any]],
                     names: Sequence[str], sizes: Any) -> tuple[str, str] | None:
    """Where the zeroed and painted runs first differ, in words, and the rule:
    ``"uninitialised"``, or ``"pointer-state"`` where the bytes that differ
    are an address in both (`_pointers_at`: the two builds are two copies
    of the model in this process, whose addresses differ)."""
    both = "when local variables start as zero bytes and {} when they start as 0xFE bytes"
    differs = ("differs between a run whose local variables start as zero bytes and one whose "
               "locals start as 0xFE bytes")
    N = sizes.num_entities

    def pointer(a: bytes, b: bytes, off: int, where: str) -> tuple[str, str] | None:
        got = _pointers_at(a, b, off)
        if got is None:
            return None
        return ("pointer-state", f"a pointer kept in {where}: 0x{got[0]:x} in one build of "
                f"the model and 0x{got[1]:x} in another, both addresses of this process")

    def agent(a: int) -> str:
        return names[a] if a < len(names) else f"agent_{a}"

    for k, (z, p) in enumerate(zip(zs, ps, strict=False)):
        # snapshot records (published at the previous boundary) and instance data
        for i in sorted(set(z["seen"]) & set(p["seen"])):
            zsn, pzn = z["seen"][i][0], p["seen"][i][0]
            if zsn != pzn:
                S = sizes.snapshot_size
                off = next(x for x in range(len(zsn)) if zsn[x] != pzn[x])
                where = (f"step {k}, instance {i}, the snapshot record of entity {off // S} "
                         f"(published at the boundary before, byte {off % S})")
                e0 = off - off % S
                return pointer(zsn[e0:e0 + S], pzn[e0:e0 + S], off % S, f"publish: {where}") \
                    or ("uninitialised", f"uninitialised read in publish: {where} " + differs)
        if _differs(z["state"], p["state"]):
            i = int(np.argwhere((z["state"] != p["state"]).any(axis=1))[0][0])
            off = int(np.argwhere(z["state"][i] != p["state"][i])[0][0])
            e = off // max(1, sizes.entity_size)
            reset = z["seen"].get(i, (b"", b"", False))[2]
            hook = "init" if reset or k == 0 else "act or handle"
            dt = native.state_dtype(sizes.entity_size)
            fields = ""
            if dt.names:
                su = np.frombuffer(z["state"][i].tobytes(), dt)[e]
                sv = np.frombuffer(p["state"][i].tobytes(), dt)[e]
                diff = [n for n in dt.names if su[n].tobytes() != sv[n].tobytes()]
                if diff:
                    fields = (f" (fields {', '.join(diff)}; {diff[0]}: "
                              f"{np.asarray(su[diff[0]]).tolist()!r} vs "
                              f"{np.asarray(sv[diff[0]]).tolist()!r})")
            where = f"step {k}, instance {i}, the state of entity {e} of {N}{fields}"
            E = max(1, sizes.entity_size)
            zr, pr = z["state"][i].tobytes(), p["state"][i].tobytes()
            return pointer(zr[e * E:(e + 1) * E], pr[e * E:(e + 1) * E], off - e * E,
                           f"{hook}: {where}") \
                or ("uninitialised", f"uninitialised read in {hook}: {where} " + differs)
        for i in sorted(set(z["seen"]) & set(p["seen"])):
            zi, pi = z["seen"][i][1], p["seen"][i][1]
            if zi != pi:
                off = next(x for x in range(len(zi)) if zi[x] != pi[x])
                where = f"step {k}, instance {i}, byte {off} of the instance data"
                return pointer(zi, pi, off, f"boundary: {where}") \
                    or ("uninitialised", f"uninitialised read in boundary: {where} " + differs)
        for key in ("obs", "reward", "terminated", "truncated", "info"):
            if _differs(z[key], p[key]):
                idx = _first_index(z[key], p[key])
                elem = f"[{idx[2]}]" if len(idx) > 2 else ""
                return ("uninitialised",
                        f"uninitialised read in observe: step {k}, instance {idx[0]}, agent "
                        f"{agent(idx[1])}, {key}{elem} is {_f(z[key][idx])} "
                        + both.format(_f(p[key][idx])))
        if _differs(z["global"], p["global"]):
            i, j = _first_index(z["global"], p["global"])
            return ("uninitialised",
                    f"uninitialised read in global_state: step {k}, instance {i}, global "
                    f"state[{j}] is {_f(z['global'][i, j])} " +
                    both.format(_f(p["global"][i, j])))
    return None


def uninit_findings(native: Any, config: Mapping[str, Any], steps: int,
                    names: Sequence[str], *, batch: int = 2, seed: int = 0,
                    unwritten: bool = False, progress: Callable[[int], None] | None = None
                    ) -> list[tuple[str, str]]:
    """Outputs that depend on bytes nobody wrote (see the module docstring):
    reads of uninitialised local variables (C models: two extra builds, with
    locals zeroed and painted, cached by content, each run serially for
    ``steps`` steps on ``batch`` instances, through a wrapper that reads each
    boundary's snapshot records and instance data) and, with
    ``unwritten=True``, output elements observe or global_state never write
    (every model; Python models get only this).  Returns at most one
    finding of rule ``"uninitialised"``: the uninitialised read if there is one
    (with the elements never written after it, if any), else the elements
    never written; where the first bytes that differ between the builds are
    an address in both, a ``"pointer-state"`` finding instead of the read
    (the model keeps a pointer in its state: not an uninitialised read).  A
    run that fails (a schedule rule, a handler error) is left to the other
    passes: what it ran up to the failure counts; one out
    of memory raises its MemoryError.  ``progress(k)``: called before each
    step k of each run (0: its reset)."""
    cfg = dict(config)
    buf, sizes = native.describe(cfg)
    builds = _painted(native) or ([("plain", native)] if unwritten else [])
    runs: list[list[dict[str, Any]]] = []
    watches: list[_Watch] = []
    w: _Watch | None  # each build's, then the first build's (if unwritten)
    for _, nat in builds:
        w = _Watch(nat, capture=len(builds) > 1)
        got, err = _watched_run(w, cfg, steps, batch, seed, progress)
        if isinstance(err, MemoryError):  # out of memory is not the model's output
            raise err
        runs.append(got)
        watches.append(w)
    parts: list[str] = []
    found: list[tuple[str, str]] = []
    if len(runs) == 2:
        diff = _read_difference(native, runs[0], runs[1], names, sizes)
        if diff and diff[0] != "uninitialised":  # a finding of its own
            found.append((diff[0], f"model '{native.name}': " + diff[1]))
        elif diff:
            parts.append(diff[1])
    w = watches[0] if watches and unwritten else None
    never = [j for j in range(sizes.obs_dim) if not w.obs_written[j]] if w and w.obs_calls \
        else []
    if w and never:
        k, i, a = w.obs_first[never[0]]
        elems = ", ".join(f"obs[{j}]" for j in never[:8]) + (" ..." if len(never) > 8 else "")
        who = names[a] if a < len(names) else f"agent_{a}"
        parts.append(f"observe never wrote {elems} of any agent in {w.obs_calls} calls (the "
                     f"first: agent {who}, instance {i}, step {k}): the runtime leaves 0 there")
    gnever = [j for j in range(sizes.state_dim) if not w.gs_written[j]] if w and w.gs_calls \
        else []
    if w and gnever:
        k, i = w.gs_first[gnever[0]]
        elems = ", ".join(f"state[{j}]" for j in gnever[:8]) + (" ..." if len(gnever) > 8
                                                                 else "")
        parts.append(f"global_state never wrote {elems} in {w.gs_calls} calls (the first: "
                     f"instance {i}, step {k}): the runtime leaves 0 there")
    if parts:
        found.append(("uninitialised", f"model '{native.name}': " + "; also ".join(parts)))
    return found


__all__ = ["FIXES", "POISON32", "bounds_findings", "uninit_findings"]


# -- the checker's memory budget ---------------------------------------------------------
#
# The checker's child (seer_env.check) runs the model under a memory budget:
# the soft limit on its data segment (RLIMIT_DATA: on Linux >= 4.7 its private
# writable mappings, heap and anonymous mmap alike; not, as RLIMIT_AS does,
# address space merely reserved, such as glibc's 64 MiB arena per thread).
# The budget is the checking child's alone: the processes it spawns (the
# compiler building a model's variants, the ThreadSanitizer run, whose shadow
# memory is terabytes of reserved private writable mappings that RLIMIT_DATA
# counts) start with the limit it had before (`unbudgeted`).

#: In the checker's child: (the budget, RLIMIT_DATA's soft limit before it); () outside.
_BUDGET: list[tuple[int, int]] = []
_STATM: list[int] = []  # a descriptor of /proc/self/statm, opened once


def data_bytes() -> int:
    """This process's data segment in bytes, what RLIMIT_DATA limits: its
    private writable mappings and its stack (/proc/self/statm's ``data``;
    0 where there is no /proc)."""
    try:
        if not _STATM:
            _STATM.append(os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC))
        return int(os.pread(_STATM[0], 256, 0).split()[5]) * resource.getpagesize()
    except (OSError, IndexError, ValueError):
        return 0


def set_data_budget(budget: int) -> None:
    """Limit this process's data segment to ``budget`` bytes (RLIMIT_DATA's
    soft limit; the hard limit stays as it was).  Raises ValueError above the
    hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and budget > hard:
        raise ValueError(f"{budget} bytes is above the hard limit on the data segment, "
                         f"{hard} bytes (ulimit -d)")
    resource.setrlimit(resource.RLIMIT_DATA, (budget, hard))
    _BUDGET[:] = [(budget, soft)]


def data_budget() -> int | None:
    """The budget `set_data_budget` set in this process (None: none)."""
    return _BUDGET[0][0] if _BUDGET else None


@contextlib.contextmanager
def unbudgeted() -> Iterator[None]:
    """Lift `set_data_budget`'s budget while the block runs (it starts a
    process that must not inherit it), then set it again."""
    if not _BUDGET:
        yield
        return
    budget, before = _BUDGET[0]
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    resource.setrlimit(resource.RLIMIT_DATA, (before, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (budget, hard))
