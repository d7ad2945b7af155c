"""teams_py: the ``teams`` test model (tests/models/teams/teams.c) written in
Python -- three agent groups with their own spaces, action masks and
multi-discrete actions -- equal to the C model bit for bit:

  "hunter" (num_hunters agents): observation [a, k, s % 5], Discrete(5),
           masked: choice (k + a) % 5 is forbidden, and choice 4 when `strict`;
  "runner" (num_runners agents): observation [a, k], MultiDiscrete [3, 2],
           masked: component 0 forbids (k + a) % 3, component 1 allows only
           1 - k % 2 when `strict`;
  "scout"  (num_scouts agents, 0 = no group): observation [a, k, s % 3, 1],
           Box(-1, 1, (2,)), no mask.

Agent a's reward is the sum of its last action's elements plus a / 8; its
infos are its group's (hunter: "steps"; runner: "steps", "c0").  Every agent
terminates after `life` steps; each act pings the next agent one lookahead
later.  `solo` keeps the hunters alone (one group, named by the hook).
`bad` breaks one rule on purpose (1: hunter masks allow nothing at step 2,
2: the mask hook writes the next agent's row -- compiled only: interpreted,
the row's view refuses the index --, 3: the groups' counts do not add up,
4: two groups with one name, 5: a group with obs_dim 0).
"""

from __future__ import annotations

import numpy as np

from seer_env import pymodel as seer

HUNTER, RUNNER, SCOUT = 0, 1, 2

MODEL = seer.declare(
    __name__,
    params=[
        seer.param("num_hunters", np.uint32, 2, lo=1, hi=1000, doc="hunters"),
        seer.param("num_runners", np.uint32, 3, lo=1, hi=1000, doc="runners"),
        seer.param("num_scouts", np.uint32, 1, lo=0, hi=1000,
                   doc="scouts (0: no scout group)"),
        seer.param("life", np.uint32, 6, lo=1, hi=1000000, doc="steps every agent lives"),
        seer.param("strict", np.uint32, 0, lo=0, hi=1,
                   doc="masks forbid more (hunter choice 4, runner component 1)"),
        seer.param("bad", np.uint32, 0, lo=0, hi=5,
                   doc="break one rule on purpose (tests)"),
        seer.param("solo", np.uint32, 0, lo=0, hi=1,
                   doc="hunters only: one group (named by the group hook), masked"),
    ],
    # laid out like teams.c's struct teams_agent (pings 8-aligned)
    state=np.dtype([("k", np.uint32), ("last_sum", np.float32), ("c0", np.int32),
                    ("pings", np.uint64)], align=True),
    actions="mixed",
    event_names=("PING",),
    warnings_as_errors=True,
)


@seer.jit
def num_agents(c):
    if c.solo:
        return c.num_hunters
    return c.num_hunters + c.num_runners + c.num_scouts


@MODEL.describe
def describe(c):
    n = int(num_agents(c)) + (1 if c.bad == 3 else 0)
    return seer.Sizes(num_entities=n, num_agents=n, obs_dim=0, state_dim=2, lookahead=0.5,
                      step_duration=1.0,
                      num_groups=1 if c.solo else 3 if c.num_scouts else 2)


@MODEL.group
def group(c, g):
    if g == HUNTER:
        return seer.Group(name="hunter", count=int(c.num_hunters), obs_dim=3,
                          action_kind="discrete", action_n=5, info_names=("steps",))
    if g == RUNNER:
        return seer.Group(name="hunter" if c.bad == 4 else "runner", count=int(c.num_runners),
                          obs_dim=2, action_kind="multi_discrete", action_dim=2,
                          info_names=("steps", "c0"))
    if g == SCOUT:
        return seer.Group(name="scout", count=int(c.num_scouts),
                          obs_dim=0 if c.bad == 5 else 4, action_kind="box", action_dim=2,
                          action_low=-1.0, action_high=1.0)
    raise seer.ConfigError(f"no group {g}")


@MODEL.action_nvec
def action_nvec(c, g):
    return (3, 2) if g == RUNNER else ()


@MODEL.group_obs_bounds
def group_obs_bounds(c, g):
    return 0.0, float(num_agents(c) + c.life + 8)


@MODEL.act
def act(ctx, st, action):
    c = seer.config(ctx)
    a = seer.self(ctx)
    g = seer.agent_group(ctx, a)
    if g == HUNTER:
        st.last_sum = action[0]
    elif g == RUNNER:
        st.last_sum = action[0] + action[1]
        st.c0 += action[0]
    else:
        v = action.view(np.float32)  # a box group of a mixed model
        st.last_sum = v[0] + v[1]
    st.k += 1
    seer.schedule(ctx, (a + 1) % num_agents(c), seer.now(ctx) + 0.5, 0)


@MODEL.handle
def handle(ctx, st, event_type, payload):
    st.pings += 1


@MODEL.observe
def observe(ctx, a, out):
    c = seer.config(ctx)
    st = seer.entity_state(ctx, a)
    s = seer.seed(ctx)
    g = seer.agent_group(ctx, a)
    if seer.group_first(ctx, g) > a:
        seer.fail(ctx, "group_first is past the agent")
        return
    out.obs[0] = a
    out.obs[1] = st.k
    if g == HUNTER:
        out.obs[2] = s % np.uint64(5)
    if g == SCOUT:
        out.obs[2] = s % np.uint64(3)
        out.obs[3] = 1.0
    out.reward[0] = st.last_sum + np.float32(a) / np.float32(8.0)
    out.terminated[0] = st.k >= c.life
    if g == HUNTER:
        out.info[0] = st.k
    elif g == RUNNER:
        out.info[0] = st.k
        out.info[1] = st.c0


@MODEL.action_mask
def action_mask(ctx, a, mask):
    c = seer.config(ctx)
    st = seer.entity_state(ctx, a)
    g = seer.agent_group(ctx, a)
    k = st.k
    if g == HUNTER:
        mask[(k + a) % 5] = 0
        if c.strict:
            mask[4] = 0
        if c.bad == 1 and k == 2:
            for i in range(5):
                mask[i] = 0
        if c.bad == 2 and a + 1 < c.num_hunters:
            n = seer.model_sizes(ctx).mask_dim
            mask[n] ^= 1  # the next agent's row (past this row's view)
    elif g == RUNNER:
        mask[(k + a) % 3] = 0
        if c.strict:
            mask[3 + k % 2] = 0


@MODEL.global_state
def global_state(ctx, out):
    n = seer.model_sizes(ctx).num_entities
    pings = np.uint64(0)
    k = np.uint64(0)
    for e in range(n):
        st = seer.entity_state(ctx, e)
        pings += st.pings
        k += st.k
    out[0] = pings
    out[1] = k


parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env
