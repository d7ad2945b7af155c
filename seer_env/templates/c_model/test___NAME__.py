"""Tests of the __NAME__ model: run them with ``python -m pytest`` in this folder."""

from pathlib import Path

import numpy as np
from pettingzoo.test import parallel_api_test

import seer_env

HERE = Path(__file__).resolve().parent


def test_keeps_the_contract():
    report = seer_env.check(HERE, {"num_agents": 6}, progress=False)
    assert report.ok, str(report)


def test_pettingzoo_api():
    model = seer_env.sdk.load(HERE)
    parallel_api_test(model.parallel_env(num_agents=6, max_cycles=30), num_cycles=40)


def test_serial_and_parallel_agree():
    report = seer_env.verify(str(HERE), steps=60, threads=2, num_envs=2, num_agents=6)
    assert report.identical, str(report)


def test_agents_finish():
    model = seer_env.sdk.load(HERE)
    venv = model.vector_env(1, num_agents=4, goal=5, threads=1, autoreset_mode="disabled")
    venv.reset(seed=0)
    done = np.zeros(4, bool)
    for _ in range(200):
        if not venv.alive.any():
            break
        _, _, term, _, _ = venv.step(np.zeros((1, 4), np.int64))
        done |= term[0]
    assert done.all()
    venv.close()
