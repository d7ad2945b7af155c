"""rogue_py: the ``rogue`` test model written in Python, breaking one rule of
the event-locality contract on demand (and failing on demand).

Entities form a ring; every step each agent acts (a tick to itself), every
tick pings the right neighbour one lookahead later.  In step ``at_step``,
entity ``culprit`` misbehaves as ``mode`` says (0: never).  What compiled
Python cannot do at all (draw from np.random, allocate, print) is refused
when the model is built: tests/test_pymodel.py builds such models separately.
"""

from __future__ import annotations

import numpy as np

from seer_env import pymodel as seer

NONE, READ_OTHER, LOOKAHEAD, SNAPSHOT, CONFIG, OBSERVE, BOUNDARY_RNG, PUBLISH, RAISE, FAIL, \
    PAST, TARGET, EVENT_TYPE = range(13)
TICK, PING = 0, 1

MODEL = seer.declare(
    __name__,
    params=[
        seer.param("num_entities", np.uint32, 6, lo=2, hi=256, doc="entities"),
        seer.param("mode", np.uint32, 0, lo=0, hi=EVENT_TYPE, doc="the rule to break"),
        seer.param("culprit", np.uint32, 1, lo=0, hi=255, doc="the entity that breaks it"),
        seer.param("at_step", np.uint32, 2, lo=0, hi=1 << 20,
                   doc="the step in which it does"),
        seer.param("lookahead", np.float64, 0.5, lo=0, hi=1, gt=True, doc="lookahead"),
    ],
    state=np.dtype([("ticks", np.uint64), ("pings", np.uint64), ("value", np.float64),
                    ("last_action", np.uint32)]),
    snapshot=np.dtype([("ticks", np.uint64)]),
    instance=np.dtype([("boundaries", np.uint64)]),
    event_names=("TICK", "PING"),
    max_cycles=20,
)


@MODEL.describe
def describe(c):
    if c.culprit >= c.num_entities:
        raise seer.ConfigError(f"culprit={c.culprit} must be < num_entities={c.num_entities}")
    return seer.Sizes(num_entities=int(c.num_entities), num_agents=int(c.num_entities),
                      obs_dim=3, action_n=3, lookahead=float(c.lookahead), step_duration=1.0)


@MODEL.act
def act(ctx, st, action):
    st.last_action = action[0]
    seer.schedule(ctx, seer.self(ctx), seer.now(ctx) + 0.125 * (1 + st.last_action), TICK)


@seer.jit
def misbehave(ctx, c, st):
    me = seer.self(ctx)
    nxt = (me + 1) % c.num_entities
    if c.mode == READ_OTHER:
        st.value += seer.entity_state(ctx, nxt).ticks
    elif c.mode == LOOKAHEAD:
        seer.schedule(ctx, nxt, seer.now(ctx), PING)
    elif c.mode == SNAPSHOT:
        seer.snapshot(ctx, me).ticks = 99
    elif c.mode == CONFIG:
        seer.config(ctx).lookahead = 0.25
    elif c.mode == RAISE:
        raise ValueError("deliberately")
    elif c.mode == FAIL:
        seer.fail(ctx, "the culprit gave up")
    elif c.mode == PAST:
        seer.schedule(ctx, me, seer.now(ctx) - 1.0, TICK)
    elif c.mode == TARGET:
        seer.schedule(ctx, c.num_entities + 3, seer.now(ctx) + 1.0, TICK)
    elif c.mode == EVENT_TYPE:
        seer.schedule(ctx, me, seer.now(ctx) + 1.0, 7)


@MODEL.handle
def handle(ctx, st, event_type, payload):
    c = seer.config(ctx)
    me = seer.self(ctx)
    if event_type == PING:
        st.pings += 1
        return
    st.ticks += 1
    nb = seer.snapshot(ctx, (me + 1) % c.num_entities)
    st.value = st.value * 0.5 + nb.ticks
    if c.mode != NONE and me == c.culprit and seer.step_index(ctx) == c.at_step:
        misbehave(ctx, c, st)
    seer.schedule(ctx, (me + 1) % c.num_entities, seer.now(ctx) + c.lookahead, PING)


@MODEL.observe
def observe(ctx, agent, out):
    c = seer.config(ctx)
    st = seer.entity_state(ctx, agent)
    if c.mode == OBSERVE and agent == c.culprit and seer.step_index(ctx) == c.at_step:
        st.value += 1.0
    out.obs[0] = st.ticks
    out.obs[1] = st.pings
    out.obs[2] = np.fmod(st.value, 1000.0)
    out.reward[0] = st.last_action


@MODEL.boundary
def boundary(ctx, data):
    c = seer.config(ctx)
    data.boundaries += 1
    if c.mode == BOUNDARY_RNG and seer.step_index(ctx) == c.at_step:
        seer.rng_u64(ctx)


@MODEL.publish
def publish(ctx, st, record):
    c = seer.config(ctx)
    record.ticks = st.ticks
    if c.mode == PUBLISH and seer.self(ctx) == c.culprit and seer.step_index(ctx) == c.at_step:
        st.pings += 7
