"""TorchRL collection speed: TorchRL's ``PettingZooWrapper`` over our ParallelEnv
against the native face (``seer_env.torchrl.SeerTorchEnv``).

One process, every env built and warmed first (one batch collected and
dropped), then ``--rounds`` rounds in rotation (each variant once per round, the
order rotating), each round one collector batch per variant; prints the median
frames/s (TorchRL frames: env steps x batch), agent-steps/s and the ratios to
the PettingZooWrapper baseline.  Random actions (the collector's random policy
over the action spec), ``threads=1`` everywhere (the figures compare the faces,
not the runtime's threads).

    python benchmarks/bench_torchrl.py [--rounds 5] [--steps 200] [--quick] [--json FILE]

(``--json benchmarks/results/torchrl.json``: the results file the docs cite.)

Variants per workload (PCS 16x16: 256 cells; Aircraft: 256 UAVs):

* ``pz``: ``PettingZooWrapper(parallel_env(...), group_map=<one group>,
  use_mask=True, done_on_any=False)`` -- one instance, the whole episode until
  every agent is done (as the native face ends an instance);
* ``seer B=1``: ``SeerTorchEnv(..., num_envs=1)``, the same work per frame;
* ``seer B=8``: ``SeerTorchEnv(..., num_envs=8)``, eight instances per frame.

The last run's figures are in ``benchmarks/results/torchrl.json`` (the README
and the Training page cite them).  ``PettingZooWrapper`` spends most of a step
in its per-agent Python loops; the native face's own ``_step`` is a small part
of a collector frame, most of which is TorchRL's bookkeeping.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from typing import Any


def _collector(env: Any, frames: int) -> Any:
    try:  # TorchRL 0.14's name for SyncDataCollector
        from torchrl.collectors import Collector
    except ImportError:  # pragma: no cover - TorchRL < 0.14
        from torchrl.collectors import SyncDataCollector as Collector

    return Collector(env, None, frames_per_batch=frames, total_frames=-1)


def _variants(name: str, cfg: dict[str, Any], steps: int) -> list[tuple[str, Any, int, int]]:
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    from seer_env.registry import get
    from seer_env.torchrl import SeerTorchEnv

    par = get(name).parallel_env(**cfg)
    agents = list(par.possible_agents)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pz = PettingZooWrapper(par, group_map={"agents": agents}, use_mask=True,
                               done_on_any=False, seed=0)
    out = [("pz", pz, 1, len(agents))]
    for b in (1, 8):
        env = SeerTorchEnv(name, num_envs=b, seed=0, **cfg)
        out.append((f"seer B={b}", env, b, len(agents)))
    return [(label, _collector(env, steps * b), steps * b, n) for label, env, b, n in out]


def bench(name: str, cfg: dict[str, Any], rounds: int, steps: int) -> dict[str, float]:
    variants = _variants(name, cfg, steps)
    iters = {label: iter(col) for label, col, _, _ in variants}
    for label in iters:  # warm: one batch each
        next(iters[label])
    rates: dict[str, list[float]] = {label: [] for label, *_ in variants}
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for label, _, frames, _ in order:
            t0 = time.perf_counter()
            next(iters[label])
            rates[label].append(frames / (time.perf_counter() - t0))
    med = {label: statistics.median(v) for label, v in rates.items()}
    base = med["pz"]
    print(f"\n{name} {cfg}")
    print(f"{'variant':<12} {'frames/s':>10} {'agent-steps/s':>14} {'x pz (agent-steps)':>19}")
    for label, _, frames, n in variants:
        b = frames // steps
        agent_rate = med[label] * n
        print(f"{label:<12} {med[label]:>10.1f} {agent_rate:>14.0f} "
              f"{med[label] / base:>19.2f}" + ("" if b == 1 else f"  ({b} instances/frame)"))
    for _, col, _, _ in variants:
        col.shutdown()
    raw = _raw(name, cfg, steps)
    print(f"without TorchRL (steps/s, one instance): ParallelEnv {raw['parallel']:.1f}, "
          f"SeerVectorEnv(copy=False) {raw['vector']:.1f}")
    return med


def _raw(name: str, cfg: dict[str, Any], steps: int) -> dict[str, float]:
    """Steps/s of the two envs underneath alone (fixed actions, one instance)."""
    import numpy as np

    from seer_env.registry import get

    m = get(name)
    par = m.parallel_env(**cfg)
    par.reset(seed=0)
    acts = {a: par.action_space(a).sample() for a in par.possible_agents}
    t0 = time.perf_counter()
    for _ in range(steps):
        if not par.agents:
            par.reset()
        par.step({a: acts[a] for a in par.agents})
    out = {"parallel": steps / (time.perf_counter() - t0)}
    par.close()
    venv = m.vector_env(1, copy=False, autoreset_mode="next_step", **cfg)
    venv.reset(seed=0)
    sp = venv.single_action_space
    a = np.stack([sp.sample() for _ in range(venv.num_agents)])[None]
    t0 = time.perf_counter()
    for _ in range(steps):
        venv.step(a)
    out["vector"] = steps / (time.perf_counter() - t0)
    venv.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200, help="env steps per batch")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 40 steps")
    ap.add_argument("--json", default="", help="write the figures to this results file "
                    "(stamped with the commit and the machine; a summary the docs cite)")
    args = ap.parse_args()
    if args.json:
        from seer_env.perf.bench import require_results_path

        require_results_path(args.json, __file__.rsplit("/", 1)[-1])
    if args.quick:
        args.rounds, args.steps = 2, 40
    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    res = {"pcs": bench("pcs_v0", dict(width=16, height=16, threads=1), args.rounds,
                        args.steps),
           "aircraft": bench("aircraft_v0", dict(num_uavs=256, threads=1), args.rounds,
                             args.steps)}
    if args.json:
        from seer_env.perf.bench import results_file, write_results

        summary = {f"{w}_{label.replace('seer B=', 'seer_b')}_vs_pz": v / r["pz"]
                   for w, r in res.items() for label, v in r.items() if label != "pz"}
        write_results(args.json, results_file(
            "bench_torchrl.py", {"frames_per_s": res}, summary, rounds=args.rounds,
            steps=args.steps, torch=torch.__version__))
        print(f"results: {args.json}")


if __name__ == "__main__":
    main()
