"""`SeerAECEnv`: the PettingZoo AEC form of `SeerParallelEnv` (its order-enforcing
wrapper and iterators).

Part of `seer_env.faces` (`seer_env.env`, its old path, re-exports the public names).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.env import AECIterator
from pettingzoo.utils.wrappers import OrderEnforcingWrapper
from pettingzoo.utils.wrappers.order_enforcing import (
    AECOrderEnforcingIterable,
    AECOrderEnforcingIterator,
)

from .._bind import gate as _gate
from .._bind.gate import close_now, exclusive
from ..errors import (
    ClosedError,
    InvalidActionError,
    SeerError,
    SnapshotError,
    StateError,
)
from .common import _CUT_SHORT_RESET, _CUT_SHORT_RESTORE, _CUT_SHORT_STEP, _PZ_DIR, raised_by_seer
from .parallel import SeerParallelEnv
from .snapshot import EnvSnapshot

if TYPE_CHECKING:  # pragma: no cover
    pass


class SeerAECEnv(parallel_to_aec_wrapper):
    """The AEC form of a [`SeerParallelEnv`][seer_env.env.SeerParallelEnv] (PettingZoo's
    ``parallel_to_aec`` wrapper), checking each action when it is given, so a
    bad one is refused at once and leaves nothing behind.

    Its calls follow the ParallelEnv's rules (one at a time, through a gate of
    its own; ClosedError after ``close()``; StateError before ``reset()``, once
    the episode is over, or after a call cut short by Ctrl-C until the next
    ``reset()``).  A finished agent's only action is None (PettingZoo's
    convention: it removes the agent)."""

    def __init__(self, parallel_env: SeerParallelEnv) -> None:
        super().__init__(parallel_env)
        self.seer_model = parallel_env.seer_model
        self._busy = _gate.new_gate()
        self._interrupted = ""
        self._reset_done = False
        _gate.track(self)

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        """Pickle (and deep-copy) as its ParallelEnv does: a fresh env of the
        same configuration (call ``reset`` on it)."""
        return (type(self), (self.env,))

    def _check_ready(self, what: str) -> None:
        if self._busy.closing or self.env._closed():
            raise ClosedError(f"{self.seer_model.name}: {what}() on a closed env")
        if not self._reset_done:
            raise StateError(f"{self.seer_model.name}: call reset() before {what}()")

    @exclusive
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if self.env._closed():
            raise ClosedError(f"{self.seer_model.name}: reset() on a closed env")
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESET  # until this wrapper has caught up
        try:
            super().reset(seed=seed, options=options)
        except SeerError as exc:  # the ParallelEnv changed nothing of ours
            if raised_by_seer(exc, _PZ_DIR):
                self._interrupted = cut
            raise
        self._reset_done = True
        self._interrupted = ""

    @exclusive
    def step(self, action: Any) -> None:
        self._check_ready("step")
        name = self.seer_model.name
        if not self.agents:
            raise StateError(f"{name}: the episode is over (every agent finished); call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise InvalidActionError(
                    f"{name}: agent {agent!r} is done (terminated or truncated): its only "
                    f"action is None (which removes it), got {action!r}")
        else:
            self.env.check_action(agent, action)
        # set before anything changes: a KeyboardInterrupt from here until this
        # wrapper has caught up with the ParallelEnv leaves it needing reset()
        self._interrupted = _CUT_SHORT_STEP
        try:
            super().step(action)
        except SeerError as exc:  # nothing changed, or the ParallelEnv says what needs a reset
            if raised_by_seer(exc, _PZ_DIR):
                self._interrupted = ""
            raise
        self._interrupted = ""

    @exclusive
    def snapshot(self) -> EnvSnapshot:
        """The AEC env's whole state (the ParallelEnv's, plus this wrapper's:
        whose turn it is, the actions collected so far this round, the last
        rewards, flags and infos) as an `EnvSnapshot`; see
        `SeerParallelEnv.snapshot`."""
        self._check_ready("snapshot")
        if self._interrupted:
            raise StateError(f"{self.seer_model.name}: {self._interrupted}; call reset() "
                             "before snapshot()")
        par = self.env.snapshot()
        mine = {k: copy.deepcopy(self.__dict__[k]) for k in _AEC_STATE if k in self.__dict__}
        return dataclasses.replace(par, face="aec", state={"parallel": par.state, "aec": mine})

    @exclusive
    def restore(self, snap: EnvSnapshot) -> None:
        """Go back to a `snapshot` of an AEC env of the same model and
        configuration (`SnapshotError` otherwise, with
        nothing changed)."""
        if self._busy.closing or self.env._closed():
            raise ClosedError(f"{self.seer_model.name}: restore() on a closed env")
        self.env._check_snapshot(snap, "aec")
        state = snap.state
        if not (isinstance(state.get("parallel"), dict) and isinstance(state.get("aec"), dict)
                and set(state["aec"]) <= set(_AEC_STATE)):
            raise SnapshotError(f"{self.seer_model.name}: the snapshot is malformed")
        par = dataclasses.replace(snap, face="parallel", state=state["parallel"])
        self.env._check_parallel_snapshot(par, "parallel")
        self._check_aec_state(state["aec"], state["parallel"]["live"])
        cut = self._interrupted
        self._interrupted = _CUT_SHORT_RESTORE  # until this wrapper has caught up
        try:
            self.env._restore_unchecked(par)
        except SeerError as exc:  # checked already: out of memory, and nothing changed
            if raised_by_seer(exc):
                self._interrupted = cut
            raise
        for k in _AEC_STATE:
            if k in state["aec"]:
                setattr(self, k, copy.deepcopy(state["aec"][k]))  # restorable again
            else:
                self.__dict__.pop(k, None)
        self._reset_done = True
        self._interrupted = ""

    def _check_aec_state(self, aec: dict[str, Any], live: tuple[str, ...]) -> None:
        """SnapshotError naming the parts of a snapshot's AEC state that are not
        what this wrapper keeps: lists and dicts of this model's agents (each
        once), whose turn it is, every live agent among ``agents``."""
        names = self.env.agent_index

        def agent(a: Any) -> bool:
            return type(a) is str and a in names

        def listed(v: Any) -> bool:
            return type(v) is list and all(map(agent, v)) and len(set(v)) == len(v)

        bad: list[str] = [k for k in ("agents", "_live_agents", "new_agents")
                          if k in aec and not listed(aec[k])]
        bad += [k for k in ("terminations", "truncations", "rewards", "_cumulative_rewards",
                            "infos", "_observations", "_actions")
                if k in aec and not (type(aec[k]) is dict and all(map(agent, aec[k])))]
        bad += [k for k in ("terminations", "truncations") if k in aec and k not in bad
                and not all(type(v) is bool for v in aec[k].values())]
        # what last() and observe() hand the user: numbers, dicts, arrays
        bad += [k for k in ("rewards", "_cumulative_rewards") if k in aec and k not in bad
                and not all(isinstance(v, (int, float, np.integer, np.floating))
                            and not isinstance(v, (bool, np.bool_)) for v in aec[k].values())]
        bad += [k for k, kinds in (("infos", (dict,)), ("_observations", (dict, np.ndarray)))
                if k in aec and k not in bad
                and not all(isinstance(v, kinds) for v in aec[k].values())]
        if "agent_selection" in aec and not agent(aec["agent_selection"]):
            bad.append("agent_selection")
        if aec.get("_skip_agent_selection") is not None and not agent(
                aec["_skip_agent_selection"]):
            bad.append("_skip_agent_selection")
        sel = aec.get("_agent_selector")
        if sel is not None and not listed(getattr(sel, "agent_order", None)):
            bad.append("_agent_selector")
        if "agents" not in bad and not set(live) <= set(aec.get("agents", live)):
            bad.append("agents (a live agent is missing)")
        if bad:
            raise SnapshotError(f"{self.seer_model.name}: the snapshot's AEC state is "
                                f"malformed: {', '.join(bad)}")

    def _observe(self, agent: Any) -> Any:
        self.env._agent_idx(agent)  # unknown: InvalidActionError
        try:
            return self._observations[agent]
        except KeyError:
            raise StateError(f"{self.seer_model.name}: agent {agent!r} finished and was "
                             "removed: it has no observation now") from None

    @exclusive
    def observe(self, agent: Any) -> Any:
        self._check_ready("observe")
        return self._observe(agent)

    @exclusive
    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._check_ready("last")
        agent = self.agent_selection
        if agent not in self._cumulative_rewards:
            raise StateError(f"{self.seer_model.name}: the episode is over (every agent "
                             "finished and was removed); call reset()")
        return (self._observe(agent) if observe else None, self._cumulative_rewards[agent],
                self.terminations[agent], self.truncations[agent], self.infos[agent])

    @exclusive
    def state(self) -> np.ndarray:
        self._check_ready("state")
        return self.env.state()

    @exclusive
    def render(self) -> Any:
        self._check_ready("render")
        return self.env.render()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self._check_ready("agent_iter")
        return super().agent_iter(max_iter)

    def close(self) -> None:
        """Close the ParallelEnv under it; the rules of `SeerParallelEnv.close`."""
        self._busy.close(close_now, self)

    def _close_now(self) -> None:
        self.env.close()


#: The AEC wrapper's episode state (PettingZoo's parallel_to_aec_wrapper keeps
#: it in these attributes), which its snapshots hold.
_AEC_STATE = ("_observations", "infos", "agents", "_live_agents", "_actions",
              "_agent_selector", "agent_selection", "terminations", "truncations", "rewards",
              "_cumulative_rewards", "new_agents", "new_values", "_skip_agent_selection")


class _NotResetError(StateError, AttributeError):
    """An AEC env's episode attribute read before reset() (an AttributeError
    too, so that ``hasattr`` and ``getattr(env, name, default)`` work)."""


_AEC_EPISODE_ATTRS = frozenset(
    {"rewards", "terminations", "truncations", "infos", "agent_selection", "num_agents",
     "agents"})


class _SeerAECIterator(AECOrderEnforcingIterator):
    def __next__(self) -> Any:
        agent = AECIterator.__next__(self)
        if not self.env._has_updated:
            raise StateError(f"{self.env.env.seer_model.name}: call step() (or reset()) for "
                             "each agent of a loop over agent_iter()")
        self.env._has_updated = False
        return agent


class _SeerAECIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> Any:
        return _SeerAECIterator(self.env, self.max_iter)


class _SeerOrderEnforcingWrapper(OrderEnforcingWrapper):
    """PettingZoo's order-enforcing wrapper with seer_env's errors: StateError
    (not AssertionError or AttributeError) before reset(), and StateError (not
    a warning and nothing done) for a step once the episode is over."""

    def _name(self) -> str:
        return str(self.env.seer_model.name)

    def __getattr__(self, name: str) -> Any:
        if name in _AEC_EPISODE_ATTRS and not self._has_reset:
            raise _NotResetError(f"{self._name()}: {name} cannot be read before reset()")
        return super().__getattr__(name)

    def _check_reset(self, what: str) -> None:
        if not self._has_reset:
            self.env._check_ready(what)  # ClosedError first, then StateError

    def step(self, action: Any) -> None:
        self._check_reset("step")
        self._has_updated = True
        self.env.step(action)

    def observe(self, agent: Any) -> Any:
        self._check_reset("observe")
        return self.env.observe(agent)

    def last(self, observe: bool = True) -> Any:
        self._check_reset("last")
        return self.env.last(observe)

    def state(self) -> np.ndarray:
        self._check_reset("state")
        return self.env.state()

    def render(self) -> Any:
        self._check_reset("render")
        return self.env.render()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self.env._check_ready("agent_iter")
        return _SeerAECIterable(self, max_iter)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)  # refused or failed: not reset
        self._has_reset = True
        self._has_updated = True

    def snapshot(self) -> EnvSnapshot:
        """The AEC env's state (`SeerAECEnv.snapshot`)."""
        self._check_reset("snapshot")
        return self.env.snapshot()

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        """Pickle (and deep-copy) as the ParallelEnv under it does, by the
        model's reference and configuration: the copy is a fresh AEC env of
        the same configuration (call ``reset`` on it); a state travels with
        `snapshot`."""
        return (aec_env, (self.env.env,))

    def restore(self, snap: EnvSnapshot) -> None:
        """Go back to ``snap`` (`SeerAECEnv.restore`); as after a reset, the
        order of calls starts afresh."""
        self.env.restore(snap)  # refused: nothing changed
        self._has_reset = True
        self._has_updated = True


def aec_env(par_env: SeerParallelEnv) -> Any:
    """``par_env`` as a PettingZoo AEC env (order-enforcing, actions checked)."""
    return _SeerOrderEnforcingWrapper(SeerAECEnv(par_env))
