"""Agent names that group as the model means.

TorchRL's ``PettingZooWrapper``, BenchMARL and AgileRL group agents by the name
before the last ``_<int>`` (``predator_0``, ``predator_1`` -> ``predator``).  So
every shipped env names its agents ``<prefix>_<int>`` with one prefix per group
(one prefix for a model without groups), and TorchRL's default grouping gives
exactly the model's groups."""

from __future__ import annotations

import re

import pytest

import seer_env
from tests.models import load as load_test_model

NAME = re.compile(r"^(.*)_(\d+)$")


def _prefix_groups(agents: list[str]) -> dict[str, list[str]]:
    """Agents by the name before the last ``_<int>``, in order (what the clients do)."""
    out: dict[str, list[str]] = {}
    for a in agents:
        m = NAME.match(a)
        assert m, f"{a!r} is not <prefix>_<int>"
        out.setdefault(m.group(1), []).append(a)
    return out


def _model_groups(env: object) -> dict[str, list[str]]:
    return {g.name: [a for a in env.possible_agents if env.group_of(a) == g.name]  # type: ignore[attr-defined]
            for g in env.groups}  # type: ignore[attr-defined]


def _check_names(env: object) -> None:
    agents = list(env.possible_agents)  # type: ignore[attr-defined]
    by_prefix = _prefix_groups(agents)
    model = _model_groups(env)
    if len(model) == 1:  # no groups: one prefix for every agent
        assert len(by_prefix) == 1, sorted(by_prefix)
        assert list(by_prefix.values()) == list(model.values())
    else:  # one prefix per group, and it is the group's name
        assert by_prefix == model
    # the index after the prefix counts the group's agents from 0
    for members in by_prefix.values():
        assert [int(NAME.match(a).group(2)) for a in members] == list(range(len(members)))


@pytest.mark.parametrize("name", seer_env.ENVS)
def test_every_shipped_env_names_agents_prefix_int_one_prefix_per_group(name: str) -> None:
    env = seer_env.make(name, api="parallel", threads=1)
    try:
        _check_names(env)
    finally:
        env.close()


def test_pcs_names_every_cell_by_its_index_and_maps_back_to_row_and_col() -> None:
    from seer_env.envs import pcs_v0

    env = pcs_v0.parallel_env(width=5, height=3, threads=1)
    assert env.possible_agents == [f"cell_{i}" for i in range(15)]
    for i, a in enumerate(env.possible_agents):
        row, col = divmod(i, 5)
        assert env.cell_of(a) == (row, col) == pcs_v0.cell_of(a, 5)
        assert env.agent_at(row, col) == a == pcs_v0.agent_at(row, col, 5)
    with pytest.raises(ValueError):
        env.cell_of("cell_15")
    with pytest.raises(ValueError):
        env.agent_at(3, 0)
    with pytest.raises(ValueError):
        env.agent_at(0, 5)
    env.close()


def test_the_sdks_default_names_follow_the_rule() -> None:
    # no agent_name hook: "agent_<i>"; groups without the hook: "<group>_<i>"
    teams = load_test_model("teams").parallel_env(threads=1)
    assert teams.possible_agents == ["hunter_0", "hunter_1", "runner_0", "runner_1",
                                     "runner_2", "scout_0"]
    _check_names(teams)
    teams.close()
    dying = load_test_model("dying").parallel_env(threads=1)
    assert all(a == f"agent_{i}" for i, a in enumerate(dying.possible_agents))
    _check_names(dying)
    dying.close()


@pytest.mark.parametrize("name", seer_env.ENVS)
def test_torchrls_default_grouping_is_the_models(name: str) -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    par = seer_env.make(name, api="parallel", threads=1)
    model = _model_groups(par)
    env = PettingZooWrapper(par, use_mask=True, categorical_actions=True)
    try:
        if len(model) == 1:  # TorchRL names the one group after the prefix
            assert list(env.group_map.values()) == list(model.values())
        else:
            assert env.group_map == model
    finally:
        env.close()
