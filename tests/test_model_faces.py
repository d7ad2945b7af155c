"""A model no env can be built of is refused where the env is built, with a
ModelError naming the hook: agent names alike (each is the agent's key in
every dict the env returns), and bounds that are no interval (NaN, low >
high, low = +inf).  An env of such a model used to fail inside Gymnasium
with its own ValueError -- or, for names alike, later -- and ``seer-env
check`` reported "no finding" for it.  The test model ``faces`` breaks one
on demand; the Python models get the same checks (the runtime's)."""

from __future__ import annotations

import contextlib
import textwrap
import threading
from pathlib import Path

import pytest

import seer_env
from seer_env.errors import ModelError
from tests.models import load

FAULTS = {
    1: r"agent_name gives agents 0 and 1 one name, 'agent_0'",
    2: r"obs_bounds gave element 1 the bounds \[nan, 1\]",
    3: r"obs_bounds gave element 0 the bounds \[2, 1\]",
    4: r"state_bounds gave element 0 the bounds \[-1, nan\]",
    5: r"obs_bounds gave element 1 the bounds \[inf, inf\]",
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_face_refuses_the_model_naming_the_hook(fault: int) -> None:
    m = load("faces")
    threads_before = threading.active_count()
    for make in (lambda: m.parallel_env(fault=fault, threads=2),
                 lambda: m.vector_env(2, fault=fault, threads=1)):
        with pytest.raises(ModelError, match=FAULTS[fault]):
            make()
    assert threading.active_count() == threads_before  # the runtimes made were closed
    ok = m.parallel_env(fault=0, threads=1)
    assert ok.possible_agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    assert ok.observation_space("agent_0").low.tolist() == [0.0, 0.0]
    assert ok.state_space.high.tolist() == [1.0]
    ok.close()


@pytest.mark.parametrize("fault", [1, 3])
def test_check_stops_on_it_with_the_hook_named(fault: int) -> None:
    """``seer-env check`` said "no finding" (exit status 0) for such a model."""
    from seer_env import cli

    folder = str(Path(load("faces").folder))
    with pytest.raises(ModelError, match=FAULTS[fault]):
        seer_env.check(folder, config={"fault": fault}, quick=True)
    assert cli.main(["check", folder, "--quick", "--set", f"fault={fault}"]) == 2


_PY = '''
import numpy as np
from seer_env import pymodel as seer

MODEL = seer.declare(__name__, state=np.dtype([("x", np.float64)]))


@MODEL.describe
def describe(c):
    return seer.Sizes(num_entities=2, num_agents=2, obs_dim=4, action_n=2, lookahead=0.5,
                      step_duration=1.0)


@MODEL.obs_bounds
def obs_bounds(c):
    return {bounds}


@MODEL.handle
def handle(ctx, st, event_type, payload):
    st.x += 1.0


@MODEL.observe
def observe(ctx, agent, out):
    out.obs[0] = seer.entity_state(ctx, agent).x
'''


@pytest.mark.parametrize("name,bounds,match", [
    # named as what it is (it read "gave element 0 the bounds [nan, nan]")
    ("wrong_length", "np.zeros(3), np.ones(3)", r"obs_bounds failed: ValueError: it returned "
                                                r"low bounds of shape \(3,\) where obs_dim is 4"),
    ("nan_low", "np.array([0, 0, 0, np.nan]), np.ones(4)", r"element 3 the bounds \[nan, 1\]"),
    ("inverted", "np.ones(4), np.zeros(4)", r"element 0 the bounds \[1, 0\]"),
])
def test_a_python_models_bounds_are_checked_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  name: str, bounds: str, match: str) -> None:
    """A Python obs_bounds hook that failed (3 values for 4 elements) made an
    env with unbounded spaces, after a warning; it is refused now."""
    monkeypatch.setenv("SEER_ENV_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / f"faces_{name}"
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(_PY).format(bounds=bounds))
    model = seer_env.sdk.load(folder)
    with pytest.warns(UserWarning) if name == "wrong_length" else contextlib.nullcontext():
        with pytest.raises(ModelError, match=match):
            model.parallel_env(threads=1)


def test_names_alike_among_many_agents() -> None:
    m = load("faces")
    with pytest.raises(ModelError, match=r"agents 0 and 1 one name, 'agent_0'"):
        m.vector_env(1, num_agents=4096, fault=1, threads=1)
    env = m.vector_env(1, num_agents=4096, threads=1)
    assert len(set(env.possible_agents)) == 4096 == len(env.possible_agents)
    env.close()
