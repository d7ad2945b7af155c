"""Small conventions PettingZoo's own tests check: finite space bounds where the
model knows them (PCS, PHOLD), and rendering (PHOLD)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, render_test

from seer_env.envs import pcs_v0, phold_v0

U32, U64 = 2.0**32 - 1, 2.0**64 - 1


def _infinity_warnings(run) -> list[str]:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if "infinity" in str(w.message)]


@pytest.mark.parametrize("make", [
    lambda: pcs_v0.env(width=3, height=2, max_cycles=20, threads=1),
    lambda: pcs_v0.env(width=3, height=2, max_cycles=20, threads=1, classic=True,
                       executor="serial"),
    lambda: pcs_v0.env(width=3, height=2, max_cycles=20, threads=1, profile_amplitude=0.5),
    lambda: phold_v0.env(num_entities=6, max_cycles=20, threads=1),
], ids=["pcs", "pcs-classic", "pcs-profile", "phold"])
def test_api_test_finds_no_infinite_bound(make) -> None:  # type: ignore[no-untyped-def]
    assert _infinity_warnings(lambda: api_test(make(), num_cycles=40)) == []
    env = make()
    env.reset(seed=0)
    for a in env.possible_agents:
        assert np.isfinite(env.observation_space(a).high).all()
    assert np.isfinite(env.state_space.high).all() and np.isfinite(env.state_space.low).all()
    env.close()


def test_pcs_bounds_are_the_32_bit_counters_over_p() -> None:
    env = pcs_v0.parallel_env(width=3, height=2, portables_per_cell=8, threads=1)
    sp = env.observation_space("cell_0")
    counts = np.float32(U32 / 8)
    assert sp.low.tolist() == [0.0] * 14
    assert sp.high.tolist() == [1, 1, counts, counts, counts, counts] + [1.0] * 8
    st = env.state_space
    assert st.high.tolist() == [1, 1, counts, counts, counts, counts] * 6 + [1, 1]
    assert st.low.tolist() == [0.0] * 36 + [-1, -1]
    prof = pcs_v0.parallel_env(width=3, height=2, profile_amplitude=0.5, threads=1)
    assert prof.observation_space("cell_0").low[-2:].tolist() == [-1, -1]
    env.close()
    prof.close()


def test_phold_bounds_are_its_64_bit_counters() -> None:
    env = phold_v0.parallel_env(num_entities=3, events_per_entity=4, threads=1)
    sp = env.observation_space("entity_0")
    assert sp.high.tolist() == [np.float32(U64 / 4), np.float32(np.log1p(U64)), 1, 1]
    assert sp.low.tolist() == [0, 0, 0, 0]
    assert env.state_space.high.tolist() == [np.float32(U64), 1] * 3
    parallel_api_test(env, num_cycles=30)  # the observations lie in those bounds
    env.close()


def test_phold_renders() -> None:
    render_test(lambda **kw: phold_v0.env(max_cycles=10, num_entities=10, threads=1, **kw))
    env = phold_v0.parallel_env(num_entities=10, render_mode="rgb_array", threads=1)
    assert env.metadata["render_modes"] == ["rgb_array", "human"]
    env.reset(seed=0)
    env.step({a: 0 for a in env.agents})
    frame = env.render()
    # 10 entities on a 4 x 4 grid of 32-pixel cells; the last 6 are padding (grey)
    assert frame.shape == (128, 128, 3) and frame.dtype == np.uint8
    cell = frame[::32, ::32].reshape(16, 3)
    assert (cell[10:] == 90).all()
    handled = env.runtime.obs[0][:, 0]
    top = int(np.argmax(handled))
    assert cell[top].tolist() == [255, 220, 20]  # the busiest entity: yellow
    env.close()
