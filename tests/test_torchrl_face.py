"""The native TorchRL face (``seer_env.torchrl.SeerTorchEnv``): TorchRL's own spec
checker on PCS, Aircraft (agents die) and hunt_v0 (two groups, masks,
MultiDiscrete); the specs TorchRL's ``PettingZooWrapper`` chooses; rollouts
equal to the batched env's (same seeds, same actions) exactly, through
TorchRL's ``step_and_maybe_reset`` with its partial resets; explicit partial
resets and seeds; bad input refused with nothing changed; a short MAPPO loop
(``SyncDataCollector`` + ``ClipPPOLoss`` + ``MultiAgentMLP``) on PCS."""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from tensordict import TensorDict  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from seer_env.errors import ConfigError, InvalidActionError, SeerError, StateError  # noqa: E402
from seer_env.registry import get as get_model  # noqa: E402
from seer_env.torchrl import SeerTorchEnv, group_names  # noqa: E402

B = 3
PCS = ("pcs_v0", dict(width=4, height=4, threads=1, max_cycles=40))
AIRCRAFT = ("aircraft_v0", dict(num_uavs=12, arena_size=60, battery_idle=0.02, threads=1,
                                max_cycles=40))
HUNT = ("hunt_v0", dict(threads=1, max_cycles=40))
PHOLD = ("phold_v0", dict(num_entities=6, threads=1, max_cycles=15))
ALL = [PCS, AIRCRAFT, HUNT, PHOLD]
IDS = [m for m, _ in ALL]


def _draw(rng: np.random.Generator, venv: Any, infos: dict[str, Any]) -> dict[str, np.ndarray]:
    """Random actions for every group (within the masks), by model group name."""
    out = {}
    masks = infos.get("action_mask")
    for g in venv.groups:
        if g.action_kind == "box":
            out[g.name] = rng.uniform(-1, 1, (venv.num_envs, g.count, g.action_dim)
                                      ).astype(np.float32)
            continue
        segs = [g.action_n] if g.action_kind == "discrete" else list(g.nvec)
        m = None
        if masks is not None:
            m = masks[g.name] if isinstance(masks, dict) else masks
        cols, lo = [], 0
        for n in segs:
            logits = rng.gumbel(size=(venv.num_envs, g.count, n))
            if m is not None:
                allowed = m[..., lo:lo + n].astype(bool)
                allowed |= ~allowed.any(-1, keepdims=True)  # dead agents: any value
                logits = np.where(allowed, logits, -np.inf)
            cols.append(logits.argmax(-1))
            lo += n
        out[g.name] = cols[0] if g.action_kind == "discrete" else np.stack(cols, -1)
    return out


def _ref_actions(venv: Any, acts: dict[str, np.ndarray]) -> Any:
    """The batched env's form: a dict by group, or the array of a plain one-group model."""
    return acts if len(acts) > 1 else acts[venv.groups[0].name]


def _per_group(venv: Any, x: Any) -> dict[str, Any]:
    if isinstance(x, dict) and len(venv.groups) > 1:
        return x
    if isinstance(x, dict):
        return {venv.groups[0].name: x[venv.groups[0].name]}
    return {venv.groups[0].name: x}


def _pair(name: str, cfg: dict[str, Any], seed: int = 7, **kw: Any) -> tuple[Any, Any]:
    env = SeerTorchEnv(name, num_envs=B, seed=seed, return_state=True, **kw, **cfg)
    ref = get_model(name).vector_env(B, autoreset_mode="disabled", **cfg)
    return env, ref


def _keys(env: Any) -> dict[str, str]:
    """model group name -> TorchRL group name."""
    return dict(zip([g.name for g in env.venv.groups], env.group_map, strict=True))


def _compare(env: Any, td: Any, ref: Any, obs: Any, infos: dict[str, Any],
             sticky: dict[str, list[np.ndarray]], rew: Any = None) -> None:
    """``td`` (a reset's output or a step's "next") holds exactly the batched env's arrays."""
    keys = _keys(env)
    alive = _per_group(ref, infos["alive"])
    masks = infos.get("action_mask")
    any_alive = np.zeros(B, bool)
    all_term = np.ones(B, bool)
    for gname, key in keys.items():
        g = td[key]
        np.testing.assert_array_equal(g["observation"].numpy(), _per_group(ref, obs)[gname])
        np.testing.assert_array_equal(g["mask"].numpy(), alive[gname])
        term, trunc = sticky[gname]
        np.testing.assert_array_equal(g["terminated"].numpy()[..., 0], term)
        np.testing.assert_array_equal(g["truncated"].numpy()[..., 0], trunc)
        np.testing.assert_array_equal(g["done"].numpy()[..., 0], term | trunc)
        if rew is not None:
            np.testing.assert_array_equal(g["reward"].numpy()[..., 0], _per_group(ref, rew)[gname])
        if masks is not None and gname in _per_group(ref, masks):
            m = _per_group(ref, masks)[gname].astype(bool) | ~alive[gname][..., None]
            np.testing.assert_array_equal(g["action_mask"].numpy().reshape(m.shape), m)
        names = next(gr for gr in ref.groups if gr.name == gname).info_names
        vals = infos[gname] if len(ref.groups) > 1 else infos
        for k in names:
            np.testing.assert_array_equal(g["info", k].numpy(), vals[k])
        any_alive |= alive[gname].any(1)
        all_term &= term.all(1)
    done = ~any_alive
    np.testing.assert_array_equal(td["done"].numpy()[:, 0], done)
    np.testing.assert_array_equal(td["terminated"].numpy()[:, 0], done & all_term)
    np.testing.assert_array_equal(td["truncated"].numpy()[:, 0], done & ~all_term)
    np.testing.assert_array_equal(td["state"].numpy(), ref.state())


def _action_td(env: Any, td: Any, acts: dict[str, np.ndarray]) -> Any:
    for gname, key in _keys(env).items():
        td[key, "action"] = torch.from_numpy(np.ascontiguousarray(acts[gname]))
    return td


# -- TorchRL's checker and the specs ---------------------------------------------------


@pytest.mark.parametrize("name,cfg", ALL, ids=IDS)
def test_check_env_specs(name: str, cfg: dict[str, Any]) -> None:
    env = SeerTorchEnv(name, num_envs=B, seed=0, return_state=True, **cfg)
    try:
        check_env_specs(env)
        td = env.rollout(60, break_when_any_done=False)  # resets finished instances itself
        assert td.batch_size == (B, 60)
    finally:
        env.close()


def test_check_env_specs_one_hot_actions() -> None:
    env = SeerTorchEnv(HUNT[0], num_envs=B, seed=0, categorical_actions=False, **HUNT[1])
    try:
        check_env_specs(env)
        td = env.rollout(30, break_when_any_done=False)
        a = td["predator", "action"]
        assert a.shape == (B, 30, 3, 7) and bool((a.sum(-1) == 2).all())  # MultiOneHot [5, 2]
        assert td["prey", "action"].shape == (B, 30, 2, 5)
    finally:
        env.close()


def test_groups_names_and_shapes() -> None:
    env = SeerTorchEnv(HUNT[0], num_envs=B, **HUNT[1])
    assert env.batch_size == (B,)
    assert list(env.group_map) == ["predator", "prey"]
    spec = env.full_action_spec
    assert type(spec["predator", "action"]).__name__ == "MultiCategorical"
    assert spec["predator", "action"].shape == (B, 3, 2)
    assert type(spec["prey", "action"]).__name__ == "Categorical"
    assert spec["prey", "action"].shape == (B, 2)
    obs = env.full_observation_spec
    assert obs["predator", "observation"].shape == (B, 3, 83)
    assert obs["predator", "action_mask"].shape == (B, 3, 7)
    assert obs["prey", "action_mask"].shape == (B, 2, 5)
    assert obs["prey", "mask"].shape == (B, 2)
    assert env.full_done_spec["done"].shape == (B, 1)
    assert env.full_done_spec["prey", "terminated"].shape == (B, 2, 1)
    assert env.full_reward_spec["predator", "reward"].shape == (B, 3, 1)
    env.close()
    pcs = SeerTorchEnv(PCS[0], num_envs=2, **PCS[1])
    assert list(pcs.group_map) == ["cell"] and len(pcs.group_map["cell"]) == 16
    assert pcs.group_map["cell"] == pcs.venv.possible_agents
    pcs.close()
    air = SeerTorchEnv(AIRCRAFT[0], num_envs=2, **AIRCRAFT[1])
    assert list(air.group_map) == ["uav"]
    assert type(air.full_action_spec["uav", "action"]).__name__ == "BoundedContinuous"
    air.close()


def test_group_name_rule() -> None:
    assert group_names(["agents"], ["cell_0_0", "cell_0_1", "cell_1_0"], [3]) == ["cell"]
    assert group_names(["agents"], ["cell_0", "cell_1"], [2]) == ["cell"]
    assert group_names(["agents"], ["a_0", "b_0"], [2]) == ["agents"]
    assert group_names(["agents"], ["x", "y"], [2]) == ["agents"]
    assert group_names(["red", "blue"], ["red_0", "blue_0"], [1, 1]) == ["red", "blue"]


@pytest.mark.parametrize("name,cfg", [HUNT, AIRCRAFT, PCS], ids=["hunt", "aircraft", "pcs"])
def test_specs_are_those_pettingzoo_wrapper_chooses(name: str, cfg: dict[str, Any]) -> None:
    """Per agent: the action spec's class, shape, dtype and bounds, the observation's
    and the action mask's shape equal those of TorchRL's PettingZooWrapper (group
    names aside: the wrapper names PCS's one group "cell", the model "agents")."""
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    env = SeerTorchEnv(name, num_envs=2, **cfg)
    par = get_model(name).parallel_env(**cfg)
    with warnings.catch_warnings():  # "tested using version == 1.24.3"
        warnings.simplefilter("ignore", UserWarning)
        pz = PettingZooWrapper(par, group_map=env.group_map, use_mask=True,
                               categorical_actions=True)
    try:
        for key in env.group_map:
            ours, theirs = env.full_action_spec[key, "action"], pz.full_action_spec[key, "action"]
            assert type(ours) is type(theirs)
            assert ours.shape[1:] == theirs.shape and ours.dtype == theirs.dtype
            if hasattr(theirs, "space") and hasattr(theirs.space, "low"):
                assert torch.equal(ours.space.low[0], theirs.space.low)
            o_ours = env.full_observation_spec[key]
            o_theirs = pz.full_observation_spec[key]
            inner = o_theirs["observation"]
            if hasattr(inner, "keys"):  # a masked group's: its mask taken out, the Box left
                inner = inner["observation"]
            assert o_ours["observation"].shape[1:] == inner.shape
            assert type(o_ours["observation"]) is type(inner)
            if "action_mask" in o_theirs.keys():
                assert o_ours["action_mask"].shape[1:] == o_theirs["action_mask"].shape
            assert o_ours["mask"].shape[1:] == o_theirs["mask"].shape
    finally:
        env.close()
        pz.close()


# -- the batched env's outputs, exactly -----------------------------------------------


@pytest.mark.parametrize("name,cfg", ALL, ids=IDS)
def test_rollout_equals_the_batched_env(name: str, cfg: dict[str, Any]) -> None:
    """Same seeds, same actions: every step's outputs (and the reset outputs
    TorchRL's step_and_maybe_reset merges in for finished instances) are the
    batched env's arrays; sticky flags are its flags or-ed since the reset."""
    env, ref = _pair(name, cfg)
    rng = np.random.default_rng(3)
    try:
        td = env.reset()
        obs, infos = ref.reset(seed=7)
        sticky = {g.name: [np.zeros((B, g.count), bool), np.zeros((B, g.count), bool)]
                  for g in ref.groups}
        _compare(env, td, ref, obs, infos, sticky)
        resets = 0
        for _ in range(70):
            acts = _draw(rng, ref, infos)
            td = _action_td(env, td, acts)
            out, td = env.step_and_maybe_reset(td)
            obs, rew, term, trunc, infos = ref.step(_ref_actions(ref, acts))
            for gname, (st, sr) in sticky.items():
                st |= _per_group(ref, term)[gname]
                sr |= _per_group(ref, trunc)[gname]
            _compare(env, out["next"], ref, obs, infos, sticky, rew)
            alive = _per_group(ref, infos["alive"]).values()
            fin = ~np.logical_or.reduce([a.any(1) for a in alive])
            if fin.any():
                resets += int(fin.sum())
                obs, infos = ref.reset(options={"reset_mask": fin})
                for st, sr in sticky.values():
                    st[fin] = sr[fin] = False
                _compare(env, td, ref, obs, infos, sticky)
        assert resets > 0  # every config finishes instances within 70 steps
    finally:
        env.close()
        ref.close()


def test_agents_die_and_instances_end_apart() -> None:
    """Aircraft: an agent that dies keeps done (masked out) while its instance
    goes on; the instance is done only when no UAV is alive."""
    env = SeerTorchEnv(AIRCRAFT[0], num_envs=B, seed=0, **AIRCRAFT[1])
    try:
        td = env.rollout(40, break_when_any_done=False)
        nxt = td["next"]
        dead = ~nxt["uav", "mask"]
        assert bool(dead.any())
        assert torch.equal(nxt["uav", "done"][..., 0], dead)  # done exactly for the dead
        one_dead_not_over = dead.any(-1) & ~nxt["done"][..., 0]
        assert bool(one_dead_not_over.any())
        assert torch.equal(nxt["done"][..., 0], dead.all(-1))
    finally:
        env.close()


# -- resets and seeds ------------------------------------------------------------------


def test_partial_reset_resets_only_those_instances_and_continues_their_seeds() -> None:
    name, cfg = PHOLD
    env, ref = _pair(name, cfg, seed=11)
    try:
        env.reset()
        ref.reset(seed=11)
        acts = np.zeros((B, 6), np.int64)
        for _ in range(3):
            td = env.step(_action_td(env, TensorDict({}, batch_size=[B]), {"agents": acts}))
            td = td["next"]
            ref.step(_ref_actions(ref, {"agents": acts}))
        mask = np.array([False, True, False])
        # TorchRL's reset keeps the input's rows where "_reset" is False (the
        # input holds the data not reset, as step_and_maybe_reset passes it)
        inp = td.clone().set("_reset", torch.from_numpy(mask[:, None].copy()))
        out = env.reset(inp)
        obs, infos = ref.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(out["entity", "observation"].numpy(), obs)
        assert not bool(out["done"].any())
        # the instances not reset keep their step's observations
        np.testing.assert_array_equal(out["entity", "observation"][0].numpy(),
                                      td["entity", "observation"][0].numpy())
        # a full reset continues every instance's seed (s + i + B ...), as the batched env
        out = env.reset()
        obs, _ = ref.reset(options={"reset_mask": np.ones(B, bool)})
        np.testing.assert_array_equal(out["entity", "observation"].numpy(), obs)
        # set_seed: the next full reset seeds instance i with s + i
        env.set_seed(5)
        out = env.reset()
        obs, _ = ref.reset(seed=5)
        np.testing.assert_array_equal(out["entity", "observation"].numpy(), obs)
    finally:
        env.close()
        ref.close()


def test_seeded_envs_roll_out_identically() -> None:
    name, cfg = HUNT
    tds = []
    for _ in range(2):
        env = SeerTorchEnv(name, num_envs=B, **cfg)
        env.set_seed(3)
        torch.manual_seed(0)
        tds.append(env.rollout(50, break_when_any_done=False))
        env.close()
    assert (tds[0] == tds[1]).all()


@pytest.mark.parametrize("bad", [1.5, -1, 2**64, "3", True])
def test_a_bad_seed_is_refused_where_it_is_given_and_changes_nothing(bad: Any) -> None:
    """set_seed, reset(seed=) and the constructor refuse a seed the batched env
    would refuse, with a ConfigError, before keeping it: the env still resets
    and rolls out as one that never saw it (it used to keep the seed, raise
    NumPy's own error from TorchRL's set_seed, and fail every later reset)."""
    name, cfg = PCS
    with pytest.raises(ConfigError, match="seed"):
        SeerTorchEnv(name, num_envs=B, seed=bad, **cfg)
    env = SeerTorchEnv(name, num_envs=B, **cfg)
    ref = SeerTorchEnv(name, num_envs=B, **cfg)
    env.set_seed(4)
    ref.set_seed(4)
    with pytest.raises(ConfigError, match="seed"):
        env.set_seed(bad)
    with pytest.raises(ConfigError, match="seed"):
        env.reset(seed=bad)
    torch.manual_seed(0)
    a = env.rollout(10, break_when_any_done=False)
    torch.manual_seed(0)
    b = ref.rollout(10, break_when_any_done=False)
    assert (a == b).all()
    env.close()
    ref.close()


@pytest.mark.parametrize("device", ["bogus", "cuda:63", 3.5])
def test_a_device_torch_cannot_use_is_a_config_error(device: Any) -> None:
    """It raised torch's own RuntimeError or AssertionError from inside TorchRL."""
    if device == "cuda:63" and torch.cuda.device_count() > 63:  # pragma: no cover
        pytest.skip("a machine with 64 GPUs")
    name, cfg = PCS
    with pytest.raises(ConfigError, match=f"device={device!r} is not a device"):
        SeerTorchEnv(name, num_envs=B, device=device, **cfg)


def test_a_snapshot_with_a_forged_seed_is_refused() -> None:
    import dataclasses

    from seer_env.errors import SnapshotError

    name, cfg = PCS
    env = SeerTorchEnv(name, num_envs=B, **cfg)
    env.reset()
    snap = env.snapshot()
    forged = dataclasses.replace(snap, state={**snap.state, "seed": "x"})
    with pytest.raises(SnapshotError, match="malformed"):
        env.restore(forged)
    env.reset()  # the env was left as it was
    env.close()


def test_group_reset_without_root_is_refused() -> None:
    env = SeerTorchEnv(PHOLD[0], num_envs=B, **PHOLD[1])
    try:
        env.reset()
        r = TensorDict({"entity": TensorDict({"_reset": torch.ones(B, 6, 1, dtype=torch.bool)},
                                             batch_size=[B, 6])}, batch_size=[B])
        with pytest.raises(ConfigError, match="root"):
            env._reset(r)
    finally:
        env.close()


# -- bad input ---------------------------------------------------------------------------


def _good(env: Any) -> Any:
    return env.rand_action(env.reset())


def test_bad_actions_are_refused_and_change_nothing() -> None:
    """Each bad step raises a SeerError and the next good step gives the batched
    env's outputs, as if the bad one never happened."""
    for name, cfg in (HUNT, AIRCRAFT, PCS):
        env, ref = _pair(name, cfg)
        try:
            td = env.reset()
            ref.reset(seed=7)
            keys = _keys(env)
            gname, key = next(iter(keys.items()))
            torch.manual_seed(0)
            good = env.rand_action(td.clone())
            a = good[key, "action"]
            def with_(k: str, v: Any, good: Any = good, keys: Any = keys) -> Any:
                # groups as (B,)-batched tensordicts of actions alone: any shape fits
                d = {kk: TensorDict({"action": good[kk, "action"]}, batch_size=[B])
                     for kk in keys.values()}
                d[k] = TensorDict({"action": v}, batch_size=[B])
                return TensorDict(d, batch_size=[B])

            bad: list[tuple[Any, type[BaseException]]] = []
            bad.append((with_(key, a[:, :-1].clone()), InvalidActionError))
            bad.append((good.clone().exclude((key, "action")), InvalidActionError))
            bad.append((with_("nosuchgroup", a.clone()), InvalidActionError))
            bad.append((with_(key, a.unsqueeze(-1).clone()), InvalidActionError))
            # the actions one level too high: a tensor where the group's
            # tensordict goes (tensordict's ValueError escaped before)
            flat = good.clone().exclude(key)
            flat.set(key, a.clone())
            bad.append((flat, InvalidActionError))
            if a.is_floating_point():
                nan = a.clone()
                nan[0, 0, 0] = float("nan")
                bad.append((with_(key, nan), InvalidActionError))
                bad.append((with_(key, a.to(torch.complex64)), InvalidActionError))
            else:
                bad.append((with_(key, a.float()), InvalidActionError))
                big = a.clone()
                big.view(-1)[0] = 10**6
                bad.append((with_(key, big), InvalidActionError))
                bad.append((with_(key, a.to(torch.bfloat16)), InvalidActionError))
            if name == "hunt_v0":  # a move the mask forbids (obstacles; any forbidden one)
                m = td["prey", "action_mask"]
                idx = (~m).nonzero()
                assert len(idx)
                i, j, k = idx[0].tolist()
                f = good["prey", "action"].clone()
                f[i, j] = k
                bad.append((with_("prey", f), InvalidActionError))
            for b, exc in bad:
                with pytest.raises(exc) as info:
                    env.step(b)
                assert isinstance(info.value, SeerError)
            with pytest.raises(InvalidActionError, match=rf"td\[{key!r}\] is a Tensor"):
                env.step(flat)
            with pytest.raises(RuntimeError, match="shape"):  # TorchRL checks the batch first
                env.step(good[:2])
            acts = {g: good[k, "action"].numpy() for g, k in keys.items()}
            out = env.step(good)["next"]
            obs, rew, _, _, _ = ref.step(_ref_actions(ref, acts))
            np.testing.assert_array_equal(out[key, "observation"].numpy(),
                                          _per_group(ref, obs)[gname])
            np.testing.assert_array_equal(out[key, "reward"].numpy()[..., 0],
                                          _per_group(ref, rew)[gname])
        finally:
            env.close()
            ref.close()


def test_a_finished_instance_is_refused_with_torchrls_way_to_reset_it() -> None:
    """Stepping a finished instance (autoreset is off here: TorchRL resets)
    is a StateError that names TorchRL's reset with a '_reset' entry; it
    named the batched env's reset(options=...), which this env refuses."""
    env = SeerTorchEnv(DYING[0], num_envs=B, seed=0, **DYING[1])
    try:
        torch.manual_seed(0)
        td = env.reset()
        for _ in range(200):
            out = env.step(env.rand_action(td.clone()))
            td = env.step_mdp(out)
            if out["next", "done"].any():
                break
        done = out["next", "done"].clone()
        assert done.any()
        with pytest.raises(StateError, match=r"finished; .*'_reset' entry") as info:
            env.step(env.rand_action(td.clone()))
        assert "options" not in str(info.value)
        again = env.reset(td.set("_reset", done))  # what it says: those instances reset
        assert not again["done"].any()
        env.step(env.rand_action(again.clone()))
    finally:
        env.close()


def test_bad_one_hot_actions_are_refused() -> None:
    env = SeerTorchEnv(HUNT[0], num_envs=B, seed=0, categorical_actions=False, **HUNT[1])
    try:
        td = env.rand_action(env.reset())
        two = td.clone()
        two["prey", "action"][0, 0] = 1
        with pytest.raises(InvalidActionError, match="one-hot"):
            env.step(two)
        flt = td.clone().set(("prey", "action"), td["prey", "action"].float())
        with pytest.raises(InvalidActionError, match="integers or bools"):
            env.step(flt)
        # one-hots of the wrong width: a narrower one was read as its argmax (a
        # legal index), a predator's multi-one-hot one wider raised torch's
        # RuntimeError from inside the split
        prey, pred = td["prey", "action"], td["predator", "action"]
        for key, bad in ((("prey", "action"), prey[..., :-1]),
                         (("prey", "action"), prey[..., :1]),
                         (("predator", "action"), torch.cat([pred, pred[..., :1] * 0], -1))):
            wrong = td.clone(recurse=False).set(key, bad)
            with pytest.raises(InvalidActionError, match=r"must end in axes of \(\d+,\)"):
                env.step(wrong)
        env.step(td)
    finally:
        env.close()


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_the_env_pickles_as_its_arguments(how: str) -> None:
    """Pickled or deep-copied (as a lambda shipped to a process-based
    collector carries it), a SeerTorchEnv is a fresh env of the same model,
    batch, options and seed (a TypeError about a module object before)."""
    import copy
    import pickle

    env = SeerTorchEnv(HUNT[0], num_envs=B, seed=7, categorical_actions=False, **HUNT[1])
    env.rollout(3)
    dup = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    try:
        assert type(dup) is SeerTorchEnv and dup.venv is not env.venv
        assert dup.batch_size == env.batch_size and dup.group_map == env.group_map
        ref = SeerTorchEnv(HUNT[0], num_envs=B, seed=7, categorical_actions=False, **HUNT[1])
        assert not dup.categorical_actions  # one-hot kept
        assert dup.full_action_spec == ref.full_action_spec
        assert dup.full_observation_spec == ref.full_observation_spec
        a, b = dup.reset(), ref.reset()  # the same seed
        assert (a == b).all()
        ref.close()
    finally:
        env.close()
        dup.close()


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="copy"):
        SeerTorchEnv(PHOLD[0], num_envs=2, copy=True, **PHOLD[1])
    with pytest.raises(ConfigError, match="autoreset_mode"):
        SeerTorchEnv(PHOLD[0], num_envs=2, autoreset_mode="next_step", **PHOLD[1])
    with pytest.raises(ConfigError, match="unknown env"):
        SeerTorchEnv("no_such_env", num_envs=2)
    with pytest.raises(ConfigError, match="num_envs"):
        SeerTorchEnv(PHOLD[0], num_envs=0, **PHOLD[1])
    env = SeerTorchEnv(PHOLD[0], num_envs=2, **PHOLD[1])
    with pytest.raises(StateError, match="reset"):
        env._step(TensorDict({}, batch_size=[2]))
    env.close()


def test_import_seer_env_needs_no_torch() -> None:
    code = ("import sys, seer_env, seer_env.torchrl; "
            "assert 'torch' not in sys.modules and 'torchrl' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- training ------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning")
def test_mappo_loop_on_pcs() -> None:
    """TorchRL's MAPPO recipe (its multi-agent PPO tutorial's pieces) runs on PCS:
    SyncDataCollector, a shared-parameter MultiAgentMLP policy and a centralised
    critic, GAE, ClipPPOLoss; a few iterations, tiny sizes."""
    from tensordict.nn import TensorDictModule
    from torch.distributions import Categorical
    try:  # TorchRL 0.14 renamed SyncDataCollector Collector (no alias left)
        from torchrl.collectors import Collector as SyncDataCollector
    except ImportError:  # pragma: no cover - TorchRL < 0.14
        from torchrl.collectors import SyncDataCollector
    from torchrl.modules import MultiAgentMLP, ProbabilisticActor
    from torchrl.objectives import ClipPPOLoss, ValueEstimators

    torch.manual_seed(0)
    env = SeerTorchEnv("pcs_v0", num_envs=4, width=4, height=4, threads=1, max_cycles=20,
                       seed=0)
    g = "cell"
    n = len(env.group_map[g])
    obs_dim = env.full_observation_spec[g, "observation"].shape[-1]
    n_act = env.full_action_spec[g, "action"].space.n
    actor = ProbabilisticActor(
        TensorDictModule(MultiAgentMLP(obs_dim, n_act, n, centralised=False, share_params=True,
                                       depth=1, num_cells=16),
                         in_keys=[(g, "observation")], out_keys=[(g, "logits")]),
        spec=env.full_action_spec_unbatched[g, "action"], in_keys=[(g, "logits")],
        out_keys=[(g, "action")], distribution_class=Categorical, return_log_prob=True,
        log_prob_key=(g, "sample_log_prob"))
    critic = TensorDictModule(
        MultiAgentMLP(obs_dim, 1, n, centralised=True, share_params=True, depth=1, num_cells=16),
        in_keys=[(g, "observation")], out_keys=[(g, "state_value")])
    collector = SyncDataCollector(env, actor, frames_per_batch=80, total_frames=240)
    loss = ClipPPOLoss(actor_network=actor, critic_network=critic, clip_epsilon=0.2,
                       entropy_coeff=0.01, normalize_advantage=False)
    loss.set_keys(reward=(g, "reward"), action=(g, "action"),
                  sample_log_prob=(g, "sample_log_prob"), value=(g, "state_value"),
                  done=(g, "done"), terminated=(g, "terminated"))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.9, lmbda=0.9)
    opt = torch.optim.Adam(loss.parameters(), 3e-4)
    iters = 0
    try:
        for data in collector:
            assert data.batch_size == (4, 20)
            with torch.no_grad():
                loss.value_estimator(data, params=loss.critic_network_params,
                                     target_params=loss.target_critic_network_params)
            for _ in range(2):
                out = loss(data.reshape(-1))
                total = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
                assert torch.isfinite(total)
                opt.zero_grad()
                total.backward()
                opt.step()
            collector.update_policy_weights_()
            iters += 1
    finally:
        collector.shutdown()
        env.close()
    assert iters == 3


def _roll(env: Any, td: Any, n: int, seed: int) -> list[Any]:
    """``n`` steps of random actions (within the masks) from ``td``, no resets:
    each step's ``next`` tensordict."""
    from torchrl.envs.utils import step_mdp

    torch.manual_seed(seed)
    out = []
    for _ in range(n):
        td = env.step(env.rand_action(td))
        out.append(td["next"].clone())
        td = step_mdp(td)
    return out


# Aircraft whose UAVs die on the way (the first after a few steps, no instance
# done within 20)
DYING = ("aircraft_v0", dict(num_uavs=12, battery_idle=0.02, threads=1, max_cycles=40))


# Hunt where a catch takes all three predators on one cell at once, and the draws
# seeded: no instance ends within the 17 steps rolled (with unseeded
# draws a caught prey ended an instance within them about 1 run in 3, and the
# next step of it raised StateError: autoreset is off here)
HUNT_LONG = ("hunt_v0", dict(HUNT[1], catch_need=3))


@pytest.mark.parametrize("name,cfg", [HUNT_LONG, DYING], ids=["hunt_v0", "aircraft_v0"])
def test_snapshot_and_restore_replay_a_rollout(name: str, cfg: dict[str, Any]) -> None:
    """restore(snapshot()) gives back the moment whole: the same steps follow
    (sticky per-agent done flags included, agents dying on Aircraft), in this env
    and in a new one on another executor; a foreign snapshot changes nothing."""
    import pickle

    from seer_env.errors import SnapshotError

    env = SeerTorchEnv(name, num_envs=B, **cfg)
    env.set_seed(5)
    td = env.reset()
    from torchrl.envs.utils import step_mdp

    torch.manual_seed(1)
    for _ in range(5):  # flags set on the way
        td = step_mdp(env.step(env.rand_action(td)))
    snap = env.snapshot()
    first = _roll(env, td, 12, 2)
    if name == "aircraft_v0":  # some UAVs died after the snapshot, not all
        last = first[-1]["uav", "done"]
        assert last.any() and not last.all()
    again = _roll(env, env.restore(snap), 12, 2)
    assert all((a == b).all() for a, b in zip(first, again, strict=True))
    other = SeerTorchEnv(name, num_envs=B, **{**cfg, "executor": "serial"})
    moved = _roll(other, other.restore(pickle.loads(pickle.dumps(snap))), 12, 2)
    assert all((a == b).all() for a, b in zip(first, moved, strict=True))
    before = other.snapshot()
    with pytest.raises(SnapshotError, match="SeerTorchEnv's snapshot"):
        other.restore(other.venv.snapshot())
    with pytest.raises(SnapshotError):
        other.restore(_foreign(name, cfg))
    assert other.snapshot().instances == before.instances
    env.close()
    other.close()


def _foreign(name: str, cfg: dict[str, Any]) -> Any:
    """A SeerTorchEnv snapshot of as many instances plus one."""
    e = SeerTorchEnv(name, num_envs=B + 1, **cfg)
    e.reset()
    try:
        return e.snapshot()
    finally:
        e.close()


def test_snapshot_before_reset_is_refused() -> None:
    name, cfg = PCS
    env = SeerTorchEnv(name, num_envs=B, **cfg)
    with pytest.raises(StateError, match="reset"):
        env.snapshot()
    env.close()
