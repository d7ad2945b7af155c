"""Smoke tests of the training examples (CI runs them: run_tests.sh installs torch)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from seer_env.envs import pcs_v0

ROOT = Path(__file__).resolve().parent.parent


def test_ppo_pcs_smoke(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    png, js = tmp_path / "curve.png", tmp_path / "result.json"
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ppo_pcs.py"), "--smoke", "--out", str(png),
         "--json-out", str(js), "--torch-threads", "1"],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(js.read_text())
    res = doc["results"]  # a results file, as benchmarks/results/ppo_pcs.json
    assert doc["summary"]["trained"] == res["trained"] and "commit" in doc
    assert doc["summary"]["fixed_guard_2"] == res["baselines"]["2"]
    assert len(res["curve"]) == 3  # smoke mode: 3 updates
    assert [int(g) for g in res["baselines"]] == [0, 1, 2, 3, 4]
    assert np.isfinite(res["trained"]) and np.isfinite(res["untrained"])
    assert "update   3" in out and "learning curve written" in out
    # the fixed-guard baseline is the plain mean reward of that policy on the
    # held-out seeds (smoke eval: 2 instances x 1 day)
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import ppo_pcs
    finally:
        sys.path.remove(str(ROOT / "examples"))
    envs = pcs_v0.agent_vector_env(2, **ppo_pcs.ENV_CONFIG)
    envs.reset(seed=10_000)
    total = 0.0
    for _ in range(72):
        _, rew, *_ = envs.step(np.full(envs.num_envs, 2))
        total += float(rew.sum())
    envs.close()
    assert res["baselines"]["2"] == total / (72 * envs.num_envs)



@pytest.mark.parametrize("env,sets,more", [
    ("aircraft_v0", ["num_uavs=4", "max_cycles=30"], []),  # Box actions, agents that die
    ("dying", ["num_agents=6"], []),                        # a model folder by path
    ("template", [], []),  # seer-env new's model: action masks (the logits are masked)
    # agent groups: the first group by default (hunt's predators: masked
    # multi-discrete actions), or one chosen (a masked multi-discrete group)
    ("hunt_v0", ["max_cycles=20"], []),
    ("teams", ["life=3"], ["--group", "runner"]),
    ("template_groups", [], ["--group", "worker"]),  # seer-env new --groups, as written
])
def test_generic_ppo_smoke(env: str, sets: list[str], more: list[str], tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if env in ("dying", "teams"):
        env = str(ROOT / "tests" / "models" / env)
    if env.startswith("template"):
        from seer_env import sdk

        env = str(sdk.new("tplmodel", tmp_path, groups=env == "template_groups"))
    cmd = [sys.executable, str(ROOT / "examples" / "ppo.py"), "--env", env, "--smoke",
           "--torch-threads", "1", *more]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout
    assert "update   3" in out
    if more or env == "hunt_v0":
        group = more[1] if more else "predator"
        assert f"training {group!r}" in out
    m = re.search(r"random policy (-?[\d.]+), PPO policy \(greedy\) (-?[\d.]+)", out)
    assert m and all(np.isfinite(float(x)) for x in m.groups())


def test_generic_ppo_names_the_groups_when_the_group_is_unknown() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "ppo.py"), "--env",
                          "hunt_v0", "--group", "wolves", "--smoke"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode != 0
    assert "--group 'wolves': hunt_v0's groups are ['predator', 'prey']" in out.stderr


@pytest.mark.parametrize("mode", ["--masks", "--no-masks"])
def test_ppo_hunt_smoke(mode: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    js = tmp_path / "result.json"
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ppo_hunt.py"), "--smoke", mode,
         "--json-out", str(js), "--torch-threads", "1"],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    updates = re.findall(r"^update +(\d+) .*mean reward (-?[\d.]+) .*forbidden ([\d.]+)$", out,
                         re.M)
    assert [int(u) for u, _, _ in updates] == [1, 2, 3]  # smoke mode: 3 updates
    m = re.search(r"random-within-masks policy (-?[\d.]+), PPO policy \(greedy\) (-?[\d.]+); "
                  r"forbidden moves attempted ([\d.]+) \(masks (on|off)\)", out)
    assert m and m.group(4) == ("on" if mode == "--masks" else "off")
    numbers = [float(x) for _, r, f in updates for x in (r, f)] + [float(x) for x in m.groups()[:3]]
    assert all(np.isfinite(x) for x in numbers)
    res = json.loads(js.read_text())
    assert len(res["curve"]) == 3 and np.isfinite(res["trained"]) and np.isfinite(res["random"])
    assert res["random_forbidden"] == 0.0  # the random baseline draws within the masks
    if mode == "--masks":
        # masked logits never pick a forbidden move (the env would have refused it)
        assert res["forbidden"] == 0.0 and all(float(f) == 0.0 for _, _, f in updates)
    else:
        assert 0.0 <= res["forbidden"] <= 1.0 and np.isfinite(res["trained_masked_eval"])


def test_async_rollout_smoke(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    res = tmp_path / "async.json"
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "async_rollout.py"), "--smoke",
         "--json", str(res)],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    # both loops make the same agent-steps (smoke: 6 steps of 4 instances x 16 cells)
    runs = dict(re.findall(r"^  (sync|async): (\d+) agent-steps in [\d.]+ s, ", out, re.M))
    assert runs == {"sync": str(6 * 4 * 16), "async": str(6 * 4 * 16)}
    m = re.search(r"^median: sync ([\d,]+) frames/s, async ([\d,]+) frames/s: ([\d.]+)x", out,
                  re.M)
    assert m and all(float(x.replace(",", "")) > 0 for x in m.groups())
    # its results file, as the README's row cites it
    doc = json.loads(res.read_text())
    assert doc["summary"]["async_vs_sync"] == pytest.approx(float(m.group(3)), abs=0.006)
    assert doc["args"]["smoke"] is True and "commit" in doc

def test_plan_pcs_smoke() -> None:
    """The snapshot/restore planner runs, and on its (deterministic) smoke episode
    it beats the random policy and every fixed guard level."""
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "plan_pcs.py"), "--smoke"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    value = {m.group(1): float(m.group(2))
             for m in re.finditer(r"^  (.+?)\s{2,}(-?\d+\.\d+)", out, re.M)}
    fixed = [value[f"fixed guard {g}"] for g in range(5)]
    planner = next(v for k, v in value.items() if k.startswith("planner"))
    assert "72 restores" in out
    assert planner > value["random policy"] and planner > max(fixed), out


def _omp_after_import(script: str, env: dict[str, str],
                      name: str = "OMP_WAIT_POLICY") -> str:
    code = (f"import os, sys; sys.path.insert(0, {str(ROOT / 'examples')!r}); import {script}; "
            f"import torch; print(os.environ.get({name!r}, '-'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-1]


@pytest.mark.parametrize("script", ["ppo", "ppo_hunt", "ppo_pcs"])
def test_synchronous_training_examples_shorten_torchs_spin(script: str) -> None:
    """The synchronous PPO examples set GOMP_SPINCOUNT=30000 before torch is
    imported (its OpenMP workers spin a tenth of libgomp's default after each
    operation: at the default they held the env pool's second core through
    the step; benchmarks/bench_torch_settings.py) and leave the wait policy
    alone (sleeping workers slow torch's operations); a spin count or wait
    policy the caller set is left as it is."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    assert _omp_after_import(script, env, "GOMP_SPINCOUNT") == "30000"
    assert _omp_after_import(script, env) == "-"
    assert _omp_after_import(script, {**env, "GOMP_SPINCOUNT": "7"}, "GOMP_SPINCOUNT") == "7"
    passive = {**env, "OMP_WAIT_POLICY": "PASSIVE"}
    assert _omp_after_import(script, passive, "GOMP_SPINCOUNT") == "-"


def test_the_async_rollout_lets_torchs_workers_sleep() -> None:
    """The asynchronous rollout (the policy's forward while the env steps)
    sets OMP_WAIT_POLICY=PASSIVE before torch is imported, and leaves a value
    the caller set alone."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    assert _omp_after_import("async_rollout", env) == "PASSIVE"
    assert _omp_after_import("async_rollout", env, "GOMP_SPINCOUNT") == "-"
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    assert _omp_after_import("async_rollout", env) == "ACTIVE"
