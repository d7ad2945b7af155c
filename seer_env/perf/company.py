"""``seer-env bench company``: the executors measured in company, as users train.

Every other benchmark times an env on an otherwise idle machine.  Nobody
trains on one: the env shares the cores with the learner (torch's own thread
pool), with other env processes (RLlib's env runners, process vector envs) and
with whatever else runs.  This benchmark measures the executors in those
situations, each against the serial executor in the same situation:

* ``alone``: the env alone, per step;
* ``torch``: a CleanRL-style training loop with a torch policy on CPU at
  torch's default thread settings (an MLP forward on the batched observations,
  sampled actions, ``step()``; every ``update_every`` iterations a backward and
  an optimizer step on the collected batch), per iteration, and the ``step()``
  alone inside it;
* ``burner-D``: the env beside a separate process that keeps a core busy
  ``D``% of the time (busy for ``D``% of every 10 ms), per step;
* ``procs-N``: ``N`` processes, each with the same env and executor, stepping
  blocks together (a barrier starts each block): aggregate steps/s, against
  ``N`` serial processes;
* ``envs-N``: ``N`` envs in one process, stepped round-robin by one thread,
  per round;
* ``async``: the torch loop on ``send``/``recv`` (two halves of the batch,
  the policy's forward pass of one half overlapping the other's step), per
  iteration.

Executors: ``serial``, ``parallel-P`` and ``optimistic-P`` for ``P`` in
``threads`` (default 2 to the usable cores) and ``auto`` (``threads="auto"``,
STPA; warmed up until it has settled, in the situation itself; its decision
cache off unless ``stpa_cache=True``, so each situation decides afresh).
Within a situation every executor has its env(s) made and warmed
(``warm_blocks`` blocks each, default 10; a pool that loses its threads in
company climbs to its steady alone stretches in about 300 steps, as auto
settles in its own warm-up), then they take turns, blocks of ``block``
iterations in an order that rotates every round (`seer_env.perf.bench`'s
blocks); the figures are the medians of the blocks and their ratios to
the serial executor's (> 1: faster than serial).
In ``alone``, ``torch``, ``async`` and ``burner-D`` each executor has
``replicas`` envs (default 2; made round by round, the executors' order
reversed every other round), which take its blocks in turn: envs made alike
in one process differ by up to 20% on some hosts, and one env a label made
that luck part of the comparison (auto's env, made last, often came out a
few percent behind the same pool made second).  ``envs-N`` makes its ``N``
envs a label the same way, round by round, and each process of ``procs-N``
makes its envs in the executors' order, or in reverse in odd processes.

The **host check** brackets the run: the smallest pool alone against the
serial executor, in a few rotated blocks, before the first situation and
after the last (``res["host_check"]``).  Where the two differ by more than
10%, the host's speed moved during the run (a shared VM's other tenants: on
the 2-core VM of our figures, parallel-2 alone ran 1.1-1.2x serial instead of
1.7-1.8x for minutes at a time, invisible in ``/proc/stat``), and the table
says so: read that run's ratios with care, or rerun it in a quiet moment.

```python
from seer_env.perf.company import bench_company, save

res = bench_company(["alone", "burner-100"], quick=True)
print(res["situations"]["burner-100"]["executors"]["parallel-2"]["ratio"])
save(res, "benchmarks/results/company.json")
```
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import math
import multiprocessing
import os
import queue
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .._bind.runtime import opt_speculates, opt_windows_max
from .._version import __version__
from ..errors import ConfigError
from ..faces.gym_vector import random_batched_actions
from ..registry import env_module
from .bench import _block_s, _blocks, commit, load_avg, machine

#: The situations of a default run, in order.
SITUATIONS: tuple[str, ...] = ("alone", "torch", "burner-50", "burner-100", "procs-2",
                               "procs-4", "envs-2", "envs-4", "async")

#: The default workload: PCS 64x64 (reports on) through the batched API, one
#: instance (a serial step takes about 2 ms on one core of the development machine).
DEFAULT_ENV = "pcs_v0"
DEFAULT_CONFIG: dict[str, Any] = {"width": 64, "height": 64}

#: A burner's period: busy for duty x this, then asleep for the rest.
BURNER_PERIOD_S = 0.01
#: How long a process of ``procs-N`` waits at the barrier for its siblings.
_BARRIER_S = 600.0
#: Blocks each configuration runs before its timed ones (`bench_company`'s
#: ``warm_blocks``): a pool that loses its threads in company runs stretches
#: of 8, 16, 32 and then 64 to 256 steps on the caller alone, each judged by
#: the pool's steps after it (native/runtime/company.c): 8 + 16 + ... + 128
#: steps alone and five pool steps after each, about 275 steps before the
#: stretches of 256 that go on without the pool's.  One warm block timed that
#: climb (parallel-2 beside a burner at full duty 0.75-0.84x the serial
#: executor, 0.98x from the 200th step on); six (192 iterations) left its
#: end in the torch loop's timed blocks (parallel-2's replicas tried the pool
#: in 5-25 of their 288 timed steps, each try about 20 ms, and its step ran
#: 8-14% slower than the serial executor's); ten (320), 0-5 steps and 0.3%.
#: ``quick``: 1.
WARM_BLOCKS = 10

Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- the workload and its executors ---------------------------------------------------------


@dataclass
class Workload:
    """The env every situation steps: a registered env (or a model folder's
    path), its config and the instances stepped together in one env.
    Episodes never end unless the config sets ``max_cycles``."""

    env: str = DEFAULT_ENV
    config: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_CONFIG))
    num_envs: int = 1

    def make(self, label: str, num_envs: int | None = None, **options: Any) -> Any:
        """A batched env of this workload on the executor ``label``
        (``serial``, ``parallel-2``, ``optimistic-2``, ``auto``)."""
        cfg = {"max_cycles": 0, **self.config, **options}
        if label == "auto":
            cfg.update(threads="auto")
            cfg.pop("executor", None)
        elif label == "serial":
            cfg.update(executor="serial", threads=1)
        else:
            ex, _, th = label.partition("-")
            cfg.update(executor=ex, threads=int(th))
        return env_module(self.env).vector_env(num_envs or self.num_envs, **cfg)


def executors(threads: Sequence[int], lookahead: float) -> list[str]:
    """The labels measured: serial, parallel (where the lookahead allows
    windows) and optimistic on each of ``threads``, and auto."""
    out = ["serial"]
    if lookahead > 0.0:
        out += [f"parallel-{p}" for p in threads]
    out += [f"optimistic-{p}" for p in threads]
    return [*out, "auto"]


def twins(labels: Sequence[str], lookahead: float, step_duration: float) -> dict[str, str]:
    """The labels among ``labels`` that run another label's executor: the
    optimistic executor on P threads speculates nothing where the lookahead
    L > 0 gives at most ``SEER_OPT_WINDOWS_MAX`` windows of width L a step
    (``step_duration``): it runs the parallel executor's windows, the same
    code (PCS 64x64, L = 1, steps of 20 windows, for one).  Its column is
    then a second measurement of ``parallel-P``'s, and how far apart the two
    read is the run's own noise.

    ```python
    twins(["serial", "parallel-2", "optimistic-2", "auto"], 1.0, 20.0)
    # {'optimistic-2': 'parallel-2'}
    ```
    """
    if opt_speculates(lookahead, step_duration):
        return {}
    out = {}
    for k in labels:
        ex, _, p = k.partition("-")
        if ex == "optimistic" and f"parallel-{p}" in labels:
            out[k] = f"parallel-{p}"
    return out


def _parse(name: str) -> tuple[str, int]:
    """A situation's kind and number (``burner-50`` -> ``("burner", 50)``)."""
    kind, _, n = name.partition("-")
    if kind in ("alone", "torch", "async") and not n:
        return kind, 0
    if kind in ("burner", "procs", "envs") and n.isdigit():
        v = int(n)
        lo, hi = (1, 100) if kind == "burner" else (1, 64)
        if lo <= v <= hi:
            return kind, v
    raise ConfigError(f"unknown situation {name!r}: one of alone, torch, async, burner-D "
                      "(D = 1..100, the burner's duty in %), procs-N, envs-N (N = 1..64)")


def _title(name: str, update_every: int) -> tuple[str, str]:
    """What a situation measures, and the unit of its time."""
    kind, n = _parse(name)
    return {
        "alone": ("the env alone", "s per step"),
        "torch": (f"training loop: torch policy forward, sample, step(); an update every "
                  f"{update_every} iterations", "s per iteration"),
        "burner": (f"beside a CPU burner process at {n}% duty", "s per step"),
        "procs": (f"{n} env processes stepping together (aggregate)",
                  "s per step of all processes together"),
        "envs": (f"{n} envs in one process, stepped round-robin", "s per round (one step each)"),
        "async": ("training loop on send()/recv(): the forward of one half overlaps the "
                  "other half's step", "s per iteration"),
    }[kind]


# -- warm-up and the auto configuration's record -------------------------------------------


def _label_of(stpa: Any) -> str:
    return "serial" if stpa.executor == "serial" else f"{stpa.executor}-{stpa.threads}"


def _settle(stpas: Sequence[Any], fn: Callable[[], Any], max_calls: int,
            max_s: float) -> dict[str, Any]:
    """Call ``fn`` until every STPA controller of ``stpas`` has settled (or a
    limit is reached); how long that took."""
    t0 = time.perf_counter()
    n = 0
    while (not all(s.settled for s in stpas) and n < max_calls
           and time.perf_counter() - t0 < max_s):
        fn()
        n += 1
    return {"warmup_calls": n, "warmup_s": time.perf_counter() - t0,
            "settled_after_warmup": all(s.settled for s in stpas),
            "choice_after_warmup": [_label_of(s) for s in stpas]}


def _settle_each(stpas: Sequence[Sequence[Any]], fns: Sequence[Callable[[], Any]],
                 max_calls: int, max_s: float) -> dict[str, Any]:
    """`_settle` for each of ``fns`` in turn (its controllers ``stpas[i]``),
    each with the whole limits; one record: the calls and seconds summed."""
    recs = [_settle(st, fn, max_calls, max_s) for st, fn in zip(stpas, fns, strict=True)]
    if len(recs) == 1:
        return recs[0]
    return {"warmup_calls": sum(r["warmup_calls"] for r in recs),
            "warmup_s": sum(r["warmup_s"] for r in recs),
            "settled_after_warmup": all(r["settled_after_warmup"] for r in recs),
            "choice_after_warmup": [c for r in recs for c in r["choice_after_warmup"]]}


def _probe_marks(stpas: Sequence[Any]) -> list[tuple[int, int]]:
    """Each controller's probe steps and decisions so far (`_auto_record`'s
    ``marks``)."""
    return [(_probe_steps(s), len(s.history)) for s in stpas]


def _probe_steps(stpa: Any) -> int:
    """Steps of ``stpa``'s probes so far, the one in progress included."""
    running = stpa.prober.probe
    return int(stpa.probe_steps) + (running.steps if running is not None else 0)


def _auto_record(stpas: Sequence[Any], warm: dict[str, Any],
                 marks: Sequence[tuple[int, int]] | None = None) -> dict[str, Any]:
    """What STPA chose (each env's, for envs-N), why, and its warm-up; with
    ``marks`` (`_probe_marks` as the timed blocks began), what it probed
    during them, each env's: its probes' steps (``probe_steps_timed``) and
    the triggers of the decisions they made (``probes_timed``: "confirm",
    a drift or company in words).  Auto's blocks hold those steps (a probe
    visits the other candidates, a switch between executors moves every
    pending event), so they say where auto fell behind the choice it made;
    and the decisions made before the blocks, each "trigger: reason"
    (``decisions_before_timed``): why the blocks began where they did."""
    rec = {**warm, "choice": [_label_of(s) for s in stpas],
           "reason": [s.reason for s in stpas], "state": [s.state for s in stpas],
           "settled": all(s.settled for s in stpas)}
    if marks is not None:
        rec["probe_steps_timed"] = [_probe_steps(s) - m[0] for s, m in zip(stpas, marks,
                                                                            strict=True)]
        rec["probes_timed"] = [[d.trigger for d in s.history[m[1]:]]
                               for s, m in zip(stpas, marks, strict=True)]
        rec["decisions_before_timed"] = [[f"{d.trigger}: {d.reason}" for d in s.history[:m[1]]]
                                         for s, m in zip(stpas, marks, strict=True)]
    return rec


def _probes_words(auto: Mapping[str, Any]) -> str:
    """``auto``'s probes during the timed blocks in words ("" where none or
    not recorded): "probed 48 timed steps (company x2, confirm)"."""
    steps = sum(auto.get("probe_steps_timed") or [])
    if not steps:
        return ""
    triggers = collections.Counter(t.split(":", 1)[0] for ts in auto.get("probes_timed") or []
                                   for t in ts)
    made = ", ".join(t if n == 1 else f"{t} x{n}" for t, n in triggers.most_common())
    return f"probed {steps} timed steps" + (f" ({made})" if made else "")


# -- a CPU burner beside the env -------------------------------------------------------------


def _burn(duty: float, period: float, started: Any, stop: Any, parent: int) -> None:
    """The burner's process: busy ``duty`` of every ``period``, until ``stop``
    is set or its parent is gone.  Ctrl-C is its parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    started.set()
    busy = duty * period
    while not stop.is_set() and os.getppid() == parent:
        end = time.perf_counter() + busy
        while time.perf_counter() < end:
            pass
        if busy < period:
            time.sleep(period - busy)


def _stop(p: Any, wait: float = 5.0) -> None:
    """End a child process: it was asked to stop; terminate, then kill it."""
    p.join(wait)
    if p.is_alive():
        p.terminate()
        p.join(wait)
    if p.is_alive():
        p.kill()
        p.join()


@contextlib.contextmanager
def burner(duty: float, period: float = BURNER_PERIOD_S) -> Iterator[Any]:
    """A separate process that keeps one core busy ``duty`` (0..1] of the time
    while the block runs; it is gone when the block ends, also on an
    exception or Ctrl-C.

    ```python
    with burner(1.0):
        ...  # measure beside it
    ```
    """
    if not 0.0 < duty <= 1.0:
        raise ConfigError(f"duty={duty!r} must be in (0, 1]")
    ctx = multiprocessing.get_context("spawn")
    started, stop = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_burn, args=(duty, period, started, stop, os.getpid()),
                    name=f"seer-env burner {duty:.0%}", daemon=True)
    p.start()
    try:
        while not started.wait(0.05):
            if not p.is_alive():
                raise RuntimeError(f"the burner process ended at start (exit code "
                                   f"{p.exitcode})")
        yield p
    finally:
        stop.set()
        _stop(p, 2.0)


# -- one iteration of each situation ----------------------------------------------------------


class Stepper:
    """One step of an env with fixed random actions (drawn each step where
    the model has action masks): what ``alone``, ``burner-D``, ``procs-N``
    and ``envs-N`` time, and a block of steps for scripts of their own.

    ```python
    from seer_env.perf.company import Stepper, Workload
    step = Stepper(Workload().make("parallel-2"))   # PCS 64x64, reset
    for _ in range(32):
        step()
    ```
    """

    def __init__(self, venv: Any, seed: int = 0) -> None:
        self.venv = venv
        self.rng = np.random.default_rng(seed)
        venv.reset(seed=seed)
        self.masked = any(g.mask_len for g in venv.groups)
        self.actions = random_batched_actions(venv, self.rng)

    def __call__(self) -> None:
        if self.masked:
            self.actions = random_batched_actions(self.venv, self.rng)
        self.venv.step(self.actions)


class _Replicas:
    """Runs of one label made alike (replicas: envs of the same executor, made
    at different points of the situation): a call steps the current one;
    `turn` moves to the next between blocks, so that a block's steps are one
    env's, consecutive, and the blocks go round the replicas.  Envs made
    alike in one process differ by up to 20% on some hosts (where their
    memory lies): a label's median over its replicas' blocks carries less of
    one env's luck."""

    def __init__(self, runs: Sequence[Callable[[], Any]]) -> None:
        self.runs = list(runs)
        self.i = 0

    def __call__(self) -> Any:
        return self.runs[self.i]()

    def turn(self) -> None:
        self.i = (self.i + 1) % len(self.runs)


def _parts(fn: Callable[[], Any]) -> list[Callable[[], Any]]:
    """The runs behind ``fn``: its replicas', or ``fn`` itself."""
    return list(fn.runs) if isinstance(fn, _Replicas) else [fn]


def _in_turn(labels: list[str], r: int) -> list[str]:
    """The order envs are made in, round (or process) ``r``: the labels', or
    in reverse every other one, so that no label's are all made last."""
    return labels if r % 2 == 0 else labels[::-1]


def _made_in_turn(plan: _Plan, make: Callable[[str], Callable[[], Any]]
                  ) -> dict[str, Callable[[], Any]]:
    """Per label, ``plan.replicas`` runs (``make(label)`` each), made round by
    round, the labels' order reversed every other round, so that no label's
    envs are all made first or last (`_Replicas`)."""
    made: dict[str, list[Callable[[], Any]]] = {k: [] for k in plan.labels}
    for r in range(plan.replicas):
        for k in _in_turn(plan.labels, r):
            made[k].append(make(k))
    return {k: v[0] if len(v) == 1 else _Replicas(v) for k, v in made.items()}


class _Round:
    """One step of each of several envs, in turn."""

    def __init__(self, steppers: Sequence[Stepper]) -> None:
        self.steppers = list(steppers)

    def __call__(self) -> None:
        for s in self.steppers:
            s()


def _torch_support(venv: Any) -> str | None:
    """Why the torch loop cannot drive this env (None: it can)."""
    if venv.grouped:
        return "the torch loop drives models with one agent group"
    kind = venv.groups[0].action_kind
    if kind not in ("discrete", "box"):
        return f"the torch loop samples Discrete or Box actions, not {kind}"
    return None


class Policy:
    """CleanRL's MLP (obs -> 64 -> 64 -> out, tanh) on every agent's row of the
    batched observations, with an Adam optimizer; Discrete actions from
    categorical logits (within the action masks), Box actions from a normal
    distribution.  Needs torch (the ``train`` extra); one policy may drive
    the loops of several envs of the same model (`TrainingLoop`)."""

    def __init__(self, venv: Any, seed: int = 0) -> None:
        import torch

        self.torch = torch
        g = venv.groups[0]
        self.discrete = g.action_kind == "discrete"
        self.low, self.high = g.action_low, g.action_high
        n_out = g.action_n if self.discrete else g.action_dim
        torch.manual_seed(seed)
        nn = torch.nn
        self.net = nn.Sequential(nn.Linear(g.obs_dim, 64), nn.Tanh(), nn.Linear(64, 64),
                                 nn.Tanh(), nn.Linear(64, n_out))
        self.log_std = nn.Parameter(torch.zeros(n_out))
        self.opt = torch.optim.Adam([*self.net.parameters(), self.log_std], lr=1e-4)

    def dist(self, obs: Any, mask: Any) -> Any:
        torch = self.torch
        out = self.net(obs)
        if self.discrete:
            if mask is not None:
                out = out.masked_fill(~mask, -1e9)
            return torch.distributions.Categorical(logits=out)
        return torch.distributions.Normal(out, self.log_std.exp())

    def act(self, obs: Any, mask: Any) -> tuple[Any, np.ndarray]:
        """Sampled actions: as a tensor (for the update) and for the env."""
        with self.torch.no_grad():
            a = self.dist(obs, mask).sample()
        if self.discrete:
            return a, a.numpy()
        return a, np.clip(a.numpy(), self.low, self.high)

    def update(self, obs: list[Any], acts: list[Any], rews: list[Any],
               masks: list[Any]) -> None:
        """A policy-gradient step on the collected batch (REINFORCE with the
        batch's mean reward as baseline): forward, backward, optimizer step."""
        torch = self.torch
        mask = torch.cat(masks) if masks[0] is not None else None
        d = self.dist(torch.cat(obs), mask)
        logp = d.log_prob(torch.cat(acts))
        if not self.discrete:
            logp = logp.sum(-1)
        r = torch.cat(rews)
        loss = -(logp * (r - r.mean())).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


class TrainingLoop:
    """One iteration of a training loop: the policy's forward pass on the last
    observations, sampled actions, ``step()`` (or, ``asynchronous``: ``recv()``
    of one half of the instances, forward, ``send()`` of its actions), and
    every ``update_every`` iterations an update on the collected batch.
    ``env_s``: seconds inside ``step()`` (or ``recv()`` and ``send()``).

    ```python
    from seer_env.perf.company import Policy, TrainingLoop, Workload
    wl = Workload()
    loop = TrainingLoop(wl.make("serial"), Policy(wl.make("serial")), update_every=16)
    for _ in range(64):
        loop()
    print(loop.env_s / 64)          # seconds a step, inside the loop
    ```
    """

    def __init__(self, venv: Any, policy: Policy, update_every: int,
                 asynchronous: bool = False, seed: int = 0) -> None:
        self.venv, self.policy, self.k = venv, policy, update_every
        self.asynchronous = asynchronous
        self.env_s = 0.0
        self.batch: tuple[list[Any], list[Any], list[Any], list[Any]] = ([], [], [], [])
        if asynchronous:
            venv.async_reset(seed=seed)
            self.obs = self.mask = self.ids = None
        else:
            self.obs, infos = venv.reset(seed=seed)
            self.mask = infos.get("action_mask")

    def __call__(self) -> None:
        torch, venv = self.policy.torch, self.venv
        if self.asynchronous:
            t0 = time.perf_counter()
            obs, rew, _, _, infos = venv.recv()
            self.env_s += time.perf_counter() - t0
            self.ids, mask = infos["env_id"], infos.get("action_mask")
        else:
            obs, mask = self.obs, self.mask
        o = torch.from_numpy(obs)
        m = None if mask is None else torch.from_numpy(np.asarray(mask, bool))
        a, act = self.policy.act(o, m)
        t0 = time.perf_counter()
        if self.asynchronous:
            venv.send(act, self.ids)
        else:
            self.obs, rew, _, _, infos = venv.step(act)
            self.mask = infos.get("action_mask")
        self.env_s += time.perf_counter() - t0
        obs_b, act_b, rew_b, mask_b = self.batch
        obs_b.append(o)
        act_b.append(a)
        rew_b.append(torch.from_numpy(np.asarray(rew, np.float32)))
        mask_b.append(m)
        if len(obs_b) >= self.k:
            self.policy.update(*self.batch)
            self.batch = ([], [], [], [])


# -- measuring a situation --------------------------------------------------------------------


@dataclass
class _Plan:
    """What every situation shares."""

    workload: Workload
    labels: list[str]
    rounds: int
    block: int
    update_every: int
    auto_calls: int
    auto_s: float
    progress: Log
    replicas: int = 1
    warm_blocks: int = WARM_BLOCKS


#: the confidence of a ratio's range (`median_range`)
RANGE_CONFIDENCE = 0.95


def median_range(xs: Sequence[float], confidence: float = RANGE_CONFIDENCE
                 ) -> tuple[float, float] | None:
    """A distribution-free confidence interval for the median of ``xs``
    (the sign test's: the k-th smallest and k-th largest, k the largest
    with a binomial tail under half of ``1 - confidence``); None where there
    are too few values for that confidence (five or fewer at 95%).  A
    label's ``ratio_range`` is its paired ratios' (one per round): an
    interval that holds 1.0 is a difference from serial the rounds cannot
    tell from the host's noise.

    ```python
    median_range([0.97, 1.02, 0.99, 1.05, 0.94, 1.01, 1.00, 0.98, 1.03])
    # (0.97, 1.03)
    median_range([1.1, 1.2, 1.3])   # None: three rounds say too little
    ```
    """
    n = len(xs)
    k, tail = 0, 0.0
    while k < n:
        nxt = tail + math.comb(n, k) / 2.0 ** n
        if 2.0 * nxt > 1.0 - confidence:
            break
        tail, k = nxt, k + 1
    if k == 0:
        return None
    ordered = sorted(xs)
    return ordered[k - 1], ordered[n - k]


def _paired(base: Sequence[float], blocks: Sequence[float]) -> list[float]:
    """Each round's ratio: serial's block time over the label's (> 1: faster)."""
    return [b / x for b, x in zip(base, blocks, strict=True)]


def auto_vs_best(ex: Mapping[str, Any], twins: Mapping[str, str] | None = None
                 ) -> dict[str, Any] | None:
    """auto against a situation's best fixed choice (``ex``: its executors'
    figures; the best: the label but auto with the highest ratio to serial,
    serial included), what the goal "auto within 5% of the best" reads: the
    median of the rounds' own ratios, the best's block time over auto's
    (1.00: as fast; 0.95: 5% slower), and its 95% range (`median_range`);
    None without auto, another label or their blocks.  ``twins`` (`twins`):
    labels that run another's code count as one configuration, each round's
    block time the mean of theirs (the best of two samples of one
    configuration is, on average, above either: a noise the goal should not
    be read against); ``best`` then names both.

    ```python
    auto_vs_best(res["situations"]["envs-4"]["executors"], res["twins"])
    # {'best': 'parallel-2 = optimistic-2', 'ratio': 0.97, 'range': (0.9, 1.02)}
    ```
    """
    if any("blocks_s" not in ex.get(k, {}) for k in ("auto", "serial")):
        return None
    groups: dict[str, list[str]] = {}
    for k in ex:
        if k != "auto" and "blocks_s" in ex[k]:
            groups.setdefault((twins or {}).get(k, k), []).append(k)
    blocks = {" = ".join(ks): [statistics.fmean(r) for r in zip(
        *(ex[k]["blocks_s"] for k in ks), strict=True)] for ks in groups.values()}
    med = statistics.median(ex["serial"]["blocks_s"])
    best = max(blocks, key=lambda g: med / statistics.median(blocks[g]))
    base = blocks[best]
    paired = _paired(base, ex["auto"]["blocks_s"])
    return {"best": best, "ratio": statistics.median(paired), "range": median_range(paired)}


def _figures(samples: dict[str, list[float]], per: float,
             inner: dict[str, list[float]] | None = None,
             alone: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Per label: the median seconds per iteration over the blocks, its ratio
    to serial's (> 1: faster), the median of the rounds' own ratios (each
    round's blocks ran back to back) and its 95% range (`median_range`;
    None under six rounds), the blocks; ``inner``: the env's part
    of each block (``env_s``); ``alone``: the steps its runtimes ran in alone
    stretches during the blocks (``alone_steps``, `Runtime.stats`)."""
    base = samples["serial"]
    med_serial = statistics.median(base) / per
    out: dict[str, dict[str, Any]] = {}
    for k, v in samples.items():
        s = statistics.median(v) / per
        paired = _paired(base, v)
        row: dict[str, Any] = {
            "s": s, "ratio": med_serial / s,
            "ratio_paired": statistics.median(paired),
            "ratio_range": median_range(paired),
            "blocks_s": [x / per for x in v]}
        if inner is not None:
            row["env_s"] = statistics.median(inner[k]) / per
        if alone is not None:
            row["alone_steps"] = alone[k]
        out[k] = row
    return out


def _runtimes(fn: Callable[[], Any]) -> list[Any]:
    """The runtimes one iteration of ``fn`` steps (a stepper's, a loop's, a
    round's)."""
    if isinstance(fn, _Replicas):
        return [rt for part in fn.runs for rt in _runtimes(part)]
    if isinstance(fn, _Round):
        return [st.venv.runtime for st in fn.steppers]
    venv = getattr(fn, "venv", None)
    return [venv.runtime] if venv is not None else []


def _alone_steps(fn: Callable[[], Any]) -> int:
    """Steps the runtimes of ``fn`` ran in alone stretches so far."""
    return sum(int(rt.stats()["alone_steps"]) for rt in _runtimes(fn))


def _rotate(plan: _Plan, runs: dict[str, Callable[[], Any]], autos: Sequence[Any],
            inner: Callable[[str], float] | None = None, block: int | None = None
            ) -> tuple[dict[str, list[float]], dict[str, list[float]] | None, dict[str, Any],
                       dict[str, int]]:
    """Warm every run (auto until its controllers have settled), then the
    rotated blocks; per label the seconds of each block, the env's seconds
    inside each (``inner(label)``: a running total), auto's record, and the
    steps each label's runtimes ran in alone stretches during the blocks.  A
    label's replicas (`_Replicas`) take its blocks in turn."""
    block = block or plan.block
    plan.progress(f"  warming {len(runs)} configurations ({plan.warm_blocks * block} "
                  "iterations each; auto until STPA settles)")
    for fn in runs.values():
        for part in _parts(fn):
            _block_s(part, plan.warm_blocks * block)
    auto_parts = _parts(runs["auto"]) if autos else []
    # each replica settles on its own (stepped in turn, each one's
    # iterations would hold the other's step, probing too)
    warm = _settle_each([[rt.stpa for rt in _runtimes(p)] for p in auto_parts], auto_parts,
                        plan.auto_calls, plan.auto_s) if autos else {}
    # and auto warm on its choice, as the others on theirs: it often settles
    # within its warm-up block, and its first timed blocks then held the
    # first steps after the decision's switch (1.7 ms a step against 1.3
    # on parallel-2, PCS 64x64 alone)
    for part in auto_parts:
        _block_s(part, block)
    marks = _probe_marks(autos)
    plan.progress(f"  {plan.rounds} rounds of {block}-iteration blocks")
    got: dict[str, list[float]] = {k: [] for k in runs}
    last: dict[str, float] = {}

    def before(k: str) -> None:
        if inner is not None:
            last[k] = inner(k)

    def after(k: str) -> None:
        if inner is not None:
            got[k].append(inner(k) - last[k])
        fn = runs[k]
        if isinstance(fn, _Replicas):
            fn.turn()

    alone0 = {k: _alone_steps(fn) for k, fn in runs.items()}
    samples = _blocks(runs, plan.rounds, block, before=before, after=after)
    alone = {k: _alone_steps(fn) - alone0[k] for k, fn in runs.items()}
    return (samples, (got if inner is not None else None), _auto_record(autos, warm, marks),
            alone)


def _alone(plan: _Plan, envs: list[Any]) -> dict[str, Any]:
    def make(k: str) -> Stepper:
        envs.append(plan.workload.make(k))
        return Stepper(envs[-1])

    runs = _made_in_turn(plan, make)
    autos = [rt.stpa for rt in _runtimes(runs["auto"])]
    samples, _, auto, alone = _rotate(plan, runs, autos)
    return {"executors": _figures(samples, plan.block, alone=alone), "auto": auto}


def _envs(plan: _Plan, envs: list[Any], n: int) -> dict[str, Any]:
    def make(k: str) -> Any:
        envs.append(plan.workload.make(k))
        return envs[-1]

    # the n envs of a label made as replicas are: round by round, no label's
    # all made last
    made = _made_in_turn(dataclasses.replace(plan, replicas=n), make)
    mine: dict[str, list[Any]] = {k: _parts(fn) for k, fn in made.items()}
    runs: dict[str, Callable[[], Any]] = {
        k: _Round([Stepper(e, seed=i) for i, e in enumerate(v)]) for k, v in mine.items()}
    autos = [e.runtime.stpa for e in mine.get("auto", [])]
    samples, _, auto, alone = _rotate(plan, runs, autos)
    return {"executors": _figures(samples, plan.block, alone=alone), "auto": auto}


def _loop(plan: _Plan, envs: list[Any], asynchronous: bool) -> dict[str, Any]:
    wl = plan.workload
    probe = wl.make("serial")
    envs.append(probe)
    why = _torch_support(probe)
    if why is not None:
        return {"skipped": why}
    policy = Policy(probe)

    def make(k: str) -> TrainingLoop:
        if asynchronous:  # two halves: one steps while the policy runs on the other
            envs.append(wl.make(k, num_envs=2 * wl.num_envs, batch_size=wl.num_envs))
        else:
            envs.append(wl.make(k))
        return TrainingLoop(envs[-1], policy, plan.update_every, asynchronous)

    runs = _made_in_turn(plan, make)
    autos = [rt.stpa for rt in _runtimes(runs["auto"])]
    # whole updates in every block
    block = plan.update_every * max(1, math.ceil(plan.block / plan.update_every))

    def env_s(k: str) -> float:  # the label's loops' running total
        return sum(cast(TrainingLoop, loop).env_s for loop in _parts(runs[k]))

    samples, inner, auto, alone = _rotate(plan, runs, autos, env_s, block)
    return {"executors": _figures(samples, block, inner, alone), "auto": auto, "block": block}


def _burner(plan: _Plan, envs: list[Any], duty: int) -> dict[str, Any]:
    with burner(duty / 100.0):
        return _alone(plan, envs)


# -- the host check -----------------------------------------------------------------------------

#: rotated blocks of the host check (serial and the smallest pool, alone)
HOST_CHECK_ROUNDS = 6
#: the host check's two ratios further apart than this: the host's speed moved
HOST_MOVED = 0.10


def _host_check(plan: _Plan) -> dict[str, Any] | None:
    """The smallest pool's speed alone over the serial executor's, in
    `HOST_CHECK_ROUNDS` rotated blocks after a warm-up block each; None
    where no pool is measured."""
    pools = [k for k in plan.labels if k not in ("serial", "auto")]
    if not pools:
        return None
    envs = [plan.workload.make("serial"), plan.workload.make(pools[0])]
    try:
        runs: dict[str, Callable[[], Any]] = {"serial": Stepper(envs[0]),
                                              pools[0]: Stepper(envs[1])}
        for fn in runs.values():
            _block_s(fn, plan.block)
        got = _blocks(runs, HOST_CHECK_ROUNDS, plan.block)
    finally:
        for e in envs:
            e.close()
    return {"pool": pools[0],
            "ratio": statistics.median(got["serial"]) / statistics.median(got[pools[0]])}


def host_moved(res: Mapping[str, Any]) -> str | None:
    """What the host check of ``res`` says where the host's speed moved during
    the run (its ratios before and after more than `HOST_MOVED` apart), else
    None."""
    hc = res.get("host_check") or {}
    before, after = hc.get("before"), hc.get("after")
    if not before or not after:
        return None
    if abs(after["ratio"] / before["ratio"] - 1.0) <= HOST_MOVED:
        return None
    return (f"the host's speed moved during the run: {before['pool']} alone ran "
            f"{before['ratio']:.2f}x serial before it, {after['ratio']:.2f}x after; read its "
            "ratios with care, or rerun it in a quiet moment")


# -- procs-N: env processes side by side --------------------------------------------------------


def _proc_main(idx: int, wl: Workload, labels: list[str], rounds: int, block: int,
               warm_calls: int, auto_calls: int, auto_s: float, barrier: Any, results: Any,
               parent: int) -> None:
    """One process of ``procs-N``: an env of each label, warmed together with
    its siblings (a barrier before each label), then the rotated blocks, each
    started together; its block times (and auto's record) go to ``results``.
    The envs are made in the labels' order in even processes and in reverse
    in odd ones, so that no label's envs are all made last (`_Replicas`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the parent ends us
    envs: dict[str, Any] = {}

    def together(_k: str) -> None:
        if os.getppid() != parent:
            raise SystemExit(1)
        barrier.wait(_BARRIER_S)

    try:
        for k in _in_turn(labels, idx):
            envs[k] = wl.make(k)
        # (the warm-up and the blocks go in the labels' order in every process)
        runs: dict[str, Callable[[], Any]] = {k: Stepper(envs[k], seed=idx) for k in labels}
        warm: dict[str, Any] = {}
        for k, fn in runs.items():
            together(k)
            _block_s(fn, warm_calls)
            if k == "auto":
                warm = _settle([envs[k].runtime.stpa], fn, auto_calls, auto_s)
        marks = _probe_marks([envs["auto"].runtime.stpa])
        alone0 = {k: _alone_steps(fn) for k, fn in runs.items()}
        samples = _blocks(runs, rounds, block, before=together)
        together("end")  # nobody's last block runs beside a finished sibling's quiet
        results.put((idx, {"blocks": samples,
                           "alone": {k: _alone_steps(fn) - alone0[k] for k, fn in runs.items()},
                           "auto": _auto_record([envs["auto"].runtime.stpa], warm, marks)}))
    except BaseException as exc:  # noqa: BLE001 (reported to the parent, which raises)
        barrier.abort()
        results.put((idx, {"error": f"{type(exc).__name__}: {exc}"}))
    finally:
        for e in envs.values():
            e.close()


def _procs(plan: _Plan, n: int) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_proc_main, name=f"seer-env bench company env {i}",
                         args=(i, plan.workload, plan.labels, plan.rounds, plan.block,
                               plan.warm_blocks * plan.block, plan.auto_calls, plan.auto_s,
                               barrier, results, os.getpid()),
                         daemon=True) for i in range(n)]
    got: dict[int, dict[str, Any]] = {}
    try:
        for p in procs:
            p.start()
        while len(got) < n:
            try:
                idx, res = results.get(timeout=0.5)
            except queue.Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    barrier.abort()
                    raise RuntimeError(f"an env process of procs-{n} died (exit code "
                                       f"{dead[0]})") from None
                continue
            if "error" in res:
                raise RuntimeError(f"env process {idx} of procs-{n}: {res['error']}")
            got[idx] = res
    finally:
        if len(got) < n:
            barrier.abort()
        for p in procs:
            _stop(p)
        results.close()
    # a round's block of a label ends when the slowest process is done
    samples = {k: [max(got[i]["blocks"][k][r] for i in range(n)) for r in range(plan.rounds)]
               for k in plan.labels}
    figs = _figures(samples, n * plan.block,
                    alone={k: sum(got[i]["alone"][k] for i in range(n)) for k in plan.labels})
    for row in figs.values():
        row["steps_per_s"] = 1.0 / row["s"]
    autos = [got[i]["auto"] for i in range(n)]
    auto: dict[str, Any] = {key: [x for a in autos for x in a[key]]
                            for key in ("choice", "reason", "state", "probe_steps_timed",
                                        "probes_timed")}
    auto["settled"] = all(a["settled"] for a in autos)
    auto["warmup_s"] = max(a.get("warmup_s", 0.0) for a in autos)
    return {"executors": figs, "auto": auto}


# -- the run ------------------------------------------------------------------------------------


def _torch_info() -> dict[str, Any] | None:
    """torch's version and default thread settings (read, never set); None
    without torch."""
    try:
        import torch
    except ImportError:
        return None
    return {"version": torch.__version__, "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                               "MKL_NUM_THREADS", "GOMP_SPINCOUNT")
                    if k in os.environ}}


def _range_cell(ex: Mapping[str, Any], k: str) -> str:
    """A label's 95% range of its paired ratios to serial, "lo-hi" ("" under
    six rounds); from its blocks where a results file predates the key."""
    row = ex[k]
    if "ratio_range" in row:
        got = row["ratio_range"]
    elif "blocks_s" not in row or "blocks_s" not in ex["serial"]:
        got = None
    else:
        got = median_range(_paired(ex["serial"]["blocks_s"], row["blocks_s"]))
    return "" if got is None else f"{got[0]:.2f}-{got[1]:.2f}"


def table(res: Mapping[str, Any]) -> str:
    """The results as a plain-text table, situation x executor: the serial
    executor's time (aggregate steps/s for ``procs-N``), every other
    executor's ratio to it (> 1: faster than serial) and auto's choice; under
    it the 95% range of each one's paired ratios (`median_range`: a range
    that holds 1.00 cannot tell that executor from serial); under a training
    loop, a row of the env's part of an iteration (``step()``, or ``recv()``
    and ``send()``) in ms."""
    labels: list[str] = list(res.get("executors", []))
    w = max([12, *(len(k) + 2 for k in labels)])
    lines = [f"{'':<16}" + "".join(f"{k:>{w}}" for k in labels) + "   auto chose"]
    for name, sit in res["situations"].items():
        ex = sit["executors"]
        serial = ex["serial"]
        first = (f"{serial['steps_per_s']:.0f}/s" if "steps_per_s" in serial
                 else f"{serial['s'] * 1e3:.3f} ms")
        cells = [first] + [f"{ex[k]['ratio']:.2f}x" for k in labels[1:]]
        auto = sit.get("auto") or {}
        chose = ", ".join(dict.fromkeys(auto.get("choice", [])))
        if chose and not auto.get("settled"):
            chose += " (not settled)"
        probed = _probes_words(auto)
        if probed:
            chose += f"; {probed}"
        lines.append(f"{name:<16}" + "".join(f"{c:>{w}}" for c in cells) + f"   {chose}")
        ranges = [""] + [_range_cell(ex, k) for k in labels[1:]]
        if any(ranges):
            lines.append(f"{'  95% range':<16}" + "".join(f"{c:>{w}}" for c in ranges))
        vs = sit.get("auto_vs_best") or auto_vs_best(ex, res.get("twins"))
        if vs is not None:
            rg = vs["range"]
            lines.append(f"{'  auto vs best':<16}{vs['ratio']:.2f} of {vs['best']}'s speed"
                         + (f" (95% range {rg[0]:.2f}-{rg[1]:.2f})" if rg else ""))
        if "env_s" in serial:
            part = "recv+send" if name == "async" else "step()"
            lines.append(f"{'  ' + part + ' ms':<16}"
                         + "".join(f"{ex[k]['env_s'] * 1e3:>{w}.3f}" for k in labels))
    for name, why in res.get("skipped", {}).items():
        lines.append(f"{name:<16}skipped: {why}")
    lines.append("(serial: its median time per step, iteration or round, or aggregate steps/s; "
                 "the others: serial's time over theirs, > 1 is faster; 95% range: of the "
                 "median of the rounds' own ratios; auto vs best: the best fixed choice's "
                 "time over auto's, round by round)")
    for k, v in res.get("twins", {}).items():
        lines.append(f"({k} speculates nothing on this workload, whose lookahead gives at "
                     f"most {opt_windows_max()} windows a step: it runs {v}'s windows, the same "
                     f"code, and how far apart the two read is the run's own noise)")
    moved = host_moved(res)
    if moved:
        lines.append(f"WARNING: {moved}")
    return "\n".join(lines)


def _rows(name: str, sit: Mapping[str, Any]) -> str:
    out = []
    procs = name.startswith("procs-")
    for i, (k, r) in enumerate(sit["executors"].items()):
        t = (f"{r['steps_per_s']:8.1f}/s" if procs else f"{r['s'] * 1e3:7.3f} ms")
        env = f"{r['env_s'] * 1e3:7.3f} ms" if "env_s" in r else ""
        out.append(f"{name if i == 0 else '':<12} {k:<14} {t:>10} {r['ratio']:9.2f}x "
                   f"{env:>10}")
    auto = sit.get("auto") or {}
    if auto.get("choice"):
        probed = _probes_words(auto)
        out.append(f"{'':<12} auto chose {', '.join(auto['choice'])}"
                   + ("" if auto.get("settled") else " (not settled)")
                   + (f"; {probed}" if probed else ""))
    return "\n".join(out)


def bench_company(situations: Sequence[str] = SITUATIONS, threads: Sequence[int] | None = None,
                  rounds: int | None = None, block: int | None = None, quick: bool = False,
                  env: str = DEFAULT_ENV, config: Mapping[str, Any] | None = None,
                  num_envs: int = 1, update_every: int = 16, stpa_cache: bool = False,
                  settle_s: float | None = None, replicas: int | None = None,
                  warm_blocks: int | None = None, log: Log = print,
                  progress: Log = _stderr) -> dict[str, Any]:
    """Measure the executors in every situation of ``situations`` (`SITUATIONS`
    by default; see the module's docstring) and return every figure as a dict
    (``json``-ready); each situation's table goes to ``log`` as it is done,
    progress to ``progress``.

    Args:
        situations: names from `SITUATIONS`, or ``burner-D``, ``procs-N``,
            ``envs-N`` with other numbers.
        threads: the pool sizes of the parallel and optimistic executors (default
            2 to the usable cores).
        rounds: blocks of each executor per situation (default 7; ``quick`` 3).
        block: iterations per block (default 32; ``quick`` 16); the loops round it
            up to whole updates.
        quick: fewer rounds, shorter blocks, a shorter wait for auto to settle.
        env, config, num_envs: the workload (default PCS 64x64, one instance).
        update_every: the loops' iterations per update (K).
        stpa_cache: let auto start from a remembered decision (default: off, so
            each situation's auto decides afresh, in company).
        settle_s: how long auto's warm-up may wait for STPA to settle (default
            30 s; ``quick`` 5 s); its record says whether it had.
        replicas: envs per executor in ``alone``, ``torch``, ``async`` and
            ``burner-D``, taking its blocks in turn (default 2; ``quick`` 1).
        warm_blocks: blocks each configuration (each replica) runs before the
            timed ones (default `WARM_BLOCKS`, 10: a pool's alone stretches
            reach their steady length in company; ``quick`` 1); auto then
            runs until STPA settles, and one block more.

    Example:

    ```python
    res = bench_company(["alone"], quick=True, config={"width": 8, "height": 8})
    print(table(res))
    ```
    """
    cores = machine()["cpus_usable"]
    threads = tuple(threads) if threads is not None else tuple(range(2, cores + 1))
    bad = [t for t in threads if not 2 <= t <= cores]
    if bad:
        raise ConfigError(f"threads {bad}: the pools measured take 2 to {cores} threads (the "
                          "usable cores; the runtime caps a pool there)")
    for what, v in (("rounds", rounds), ("block", block), ("num_envs", num_envs),
                    ("update_every", update_every), ("replicas", replicas),
                    ("warm_blocks", warm_blocks)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ConfigError(f"{what}={v!r} must be a positive int")
    if settle_s is not None and not settle_s >= 0:
        raise ConfigError(f"settle_s={settle_s!r} must be a number of seconds >= 0")
    names = list(dict.fromkeys(situations))
    for name in names:
        _parse(name)
    wl = Workload(env, dict(DEFAULT_CONFIG if config is None else config), num_envs)
    t_start = time.perf_counter()
    res: dict[str, Any] = {
        "benchmark": "company", "seer_env": __version__, **commit(), "machine": machine(),
        "load_avg_before": load_avg(), "workload": {"env": env, "config": wl.config,
                                                 "num_envs": num_envs},
        "quick": quick, "stpa_cache": stpa_cache, "update_every": update_every,
        "replicas": replicas or (1 if quick else 2),
        "warm_blocks": warm_blocks or (1 if quick else WARM_BLOCKS),
        # (imported only for the loops: importing torch takes seconds)
        "torch": (_torch_info() if any(_parse(n)[0] in ("torch", "async") for n in names)
                  else None),
        "situations": {}, "skipped": {}}
    saved = os.environ.get("SEER_STPA_CACHE")
    if not stpa_cache:
        os.environ["SEER_STPA_CACHE"] = "0"
    try:
        probe = wl.make("serial")
        try:
            sz = probe.runtime.sizes
            labels = executors(threads, sz.lookahead)
            res["twins"] = twins(labels, sz.lookahead, sz.step_duration)
        finally:
            probe.close()
        plan = _Plan(wl, labels, rounds or (3 if quick else 7), block or (16 if quick else 32),
                     update_every, 500 if quick else 3000,
                     settle_s if settle_s is not None else 5.0 if quick else 30.0, progress,
                     res["replicas"], res["warm_blocks"])
        res.update(executors=labels, threads=list(threads), rounds=plan.rounds,
                   block=plan.block)
        log(f"seer-env bench company: {env} {wl.config}, {num_envs} instance(s); "
            f"{', '.join(labels)}; {plan.rounds} rounds of {plan.block}-iteration blocks "
            f"after {plan.warm_blocks} warm-up block(s) each\n"
            f"{'':<12} {'executor':<14} {'time':>10} {'vs serial':>10} {'env part':>10}  "
            "(time: median per step, iteration or round; procs-N: aggregate steps/s)")
        has_torch = res["torch"] is not None
        progress("[company] host check: the smallest pool alone against serial")
        check = _host_check(plan)
        for i, name in enumerate(names):
            kind, n = _parse(name)
            if kind in ("torch", "async") and not has_torch:
                why = "torch is not installed (pip install 'seer_env[train]')"
                res["skipped"][name] = why
                log(f"{name}: skipped: {why}")
                continue
            progress(f"[company {i + 1}/{len(names)}] {name}: {_title(name, update_every)[0]}")
            load0 = load_avg()
            t0 = time.perf_counter()
            mine: list[Any] = []
            try:
                if kind == "alone":
                    sit = _alone(plan, mine)
                elif kind in ("torch", "async"):
                    sit = _loop(plan, mine, kind == "async")
                elif kind == "burner":
                    sit = _burner(plan, mine, n)
                elif kind == "procs":
                    sit = _procs(plan, n)
                else:
                    sit = _envs(plan, mine, n)
            finally:
                for e in mine:
                    e.close()
            if "skipped" in sit:
                res["skipped"][name] = sit["skipped"]
                log(f"{name}: skipped: {sit['skipped']}")
                continue
            title, unit = _title(name, update_every)
            sit = {"title": title, "unit": unit, "block": sit.pop("block", plan.block),
                   "load_avg_before": load0, "wall_s": time.perf_counter() - t0, **sit,
                   "auto_vs_best": auto_vs_best(sit["executors"], res.get("twins"))}
            res["situations"][name] = sit
            log(f"{name}: {title} ({unit})\n{_rows(name, sit)}")
        if check is not None:
            progress("[company] host check again")
            res["host_check"] = {"before": check, "after": _host_check(plan)}
            log(f"host check: {check['pool']} alone ran {check['ratio']:.2f}x serial before "
                f"the situations, {res['host_check']['after']['ratio']:.2f}x after")
    finally:
        if saved is None:
            os.environ.pop("SEER_STPA_CACHE", None)
        else:
            os.environ["SEER_STPA_CACHE"] = saved
    res["load_avg_after"] = load_avg()
    res["wall_s"] = time.perf_counter() - t_start
    return res


def save(res: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write the results as JSON (e.g. to ``benchmarks/results/company.json``)."""
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=float)
        f.write("\n")


__all__ = ["DEFAULT_CONFIG", "DEFAULT_ENV", "HOST_MOVED", "RANGE_CONFIDENCE", "SITUATIONS",
           "Policy", "Stepper", "TrainingLoop", "Workload", "bench_company", "burner",
           "executors", "host_moved", "median_range", "save", "table"]
