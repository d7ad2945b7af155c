"""PHOLD written in Python: the shipped ``phold_v0`` (C) ported to seer_env's
Python model API, step for step, so that its outputs equal the C model's bit
for bit on every executor.

On each event an entity schedules exactly one new event, to itself or, with
probability ``remote``, to a uniformly random entity, at ``(now + L) + scale *
Exp(mean)``; ``work`` iterations of a dependent floating-point recurrence
stand in for model computation.  Every entity is an agent: its action
(``Discrete(3)``) sets the scale of its future delays (0: 1.0, 1: 0.5,
2: 2.0).  Observation: ``[events handled last step / events_per_entity,
log1p(total handled), checksum bits 40..63 / 2**24, work accumulator]``;
reward: the first of those; infos: handled, remote_in, checksum >> 11.

Run it like any model::

    import seer_env
    model = seer_env.sdk.load("examples/phold_py")
    env = model.parallel_env(num_entities=64, threads=2)
"""

from __future__ import annotations

import math

import numpy as np

from seer_env import pymodel as seer

PHOLD_EVENT = 0
SCALES = (1.0, 0.5, 2.0)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)

MODEL = seer.declare(
    __name__,
    params=[
        seer.param("num_entities", np.uint32, 64, lo=1, hi=1 << 22,
                   doc="entities, each one an agent"),
        seer.param("events_per_entity", np.uint32, 4, lo=1, hi=1024,
                   doc="events each entity starts with"),
        seer.param("remote", np.float64, 0.5, lo=0, hi=1,
                   doc="probability that an event goes to a uniformly random entity"),
        seer.param("mean", np.float64, 1.0, lo=0, hi=1e300,
                   doc="mean of the exponential part of every delay"),
        seer.param("lookahead", np.float64, 0.5, lo=0, hi=1e300,
                   doc="L: every new event is due at t + L + scale * Exp(mean)"),
        seer.param("work", np.uint32, 0, lo=0, hi=100_000_000,
                   doc="floating-point loop iterations per event (model computation)"),
        seer.param("step_duration", np.float64, 4.0, lo=0, hi=1e300, gt=True,
                   doc="D: simulated time per step"),
    ],
    state=np.dtype([("checksum", np.uint64), ("handled", np.uint64),
                    ("handled_step", np.uint64), ("remote_in", np.uint64),
                    ("acc", np.float64), ("scale", np.float64)]),
    payload=np.dtype([("hops", np.uint64), ("origin", np.uint32), ("pad", np.uint32)]),
    snapshot=np.dtype([("handled", np.uint64)]),
    info_names=("handled", "remote_in", "checksum"),
    event_names=("PHOLD_EVENT",),
    max_cycles=100,
)


@seer.jit
def mix64(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@seer.jit
def bits_of(x):
    return np.float64(x).view(np.uint64)


@MODEL.describe
def describe(c):
    if not (c.lookahead > 0.0 or c.mean > 0.0):
        raise seer.ConfigError("lookahead and mean cannot both be 0 (time would not advance)")
    n = int(c.num_entities)
    return seer.Sizes(num_entities=n, num_agents=n, obs_dim=4, action_n=3, state_dim=2 * n,
                      lookahead=float(c.lookahead), step_duration=float(c.step_duration),
                      pending_events=n * int(c.events_per_entity))


@MODEL.agent_name
def agent_name(c, agent):
    return f"entity_{agent}"


#: the counters are 64-bit: the bounds of the C model (its README, "Steps and the RL face")
_U64 = float(2**64 - 1)


@MODEL.obs_bounds
def obs_bounds(c):
    return [0, 0, 0, 0], [_U64 / float(c.events_per_entity), math.log1p(_U64), 1, 1]


@MODEL.state_bounds
def state_bounds(c):
    n = int(c.num_entities)
    return np.zeros(2 * n), np.tile([_U64, 1.0], n)


@MODEL.init
def init(ctx, st):
    c = seer.config(ctx)
    me = seer.self(ctx)
    st.scale = 1.0
    st.checksum = mix64(np.uint64(me) + np.uint64(1))
    for _ in range(c.events_per_entity):
        t = seer.now(ctx) + seer.rng_exponential(ctx, c.mean)
        seer.schedule(ctx, me, t, PHOLD_EVENT, (0, me))


@MODEL.act
def act(ctx, st, action):
    st.scale = SCALES[action[0]]
    st.handled_step = 0


@MODEL.handle
def handle(ctx, st, event_type, payload):
    c = seer.config(ctx)
    me = seer.self(ctx)
    now = seer.now(ctx)
    # floating-point work: a dependent recurrence the compiler cannot drop
    x = st.acc + float(payload.hops & np.uint64(1023)) * 1e-3
    for _ in range(c.work):
        x = x * 0.999999 + 0.5
    st.acc = x - math.floor(x)
    st.handled += np.uint64(1)
    st.handled_step += np.uint64(1)
    if payload.origin != me:
        st.remote_in += np.uint64(1)
    target = me
    if c.remote > 0.0 and seer.rng_uniform(ctx) < c.remote:
        target = seer.rng_below(ctx, c.num_entities)
    # reading another entity's published record exercises the snapshot
    rec = seer.snapshot(ctx, target)
    st.checksum = mix64(st.checksum ^ bits_of(now) ^ (payload.hops << np.uint64(32))
                        ^ np.uint64(payload.origin) ^ (rec.handled * GOLDEN))
    t = (now + c.lookahead) + st.scale * seer.rng_exponential(ctx, c.mean)
    seer.schedule(ctx, target, t, PHOLD_EVENT, (payload.hops + np.uint64(1), me))


@MODEL.observe
def observe(ctx, agent, out):
    c = seer.config(ctx)
    st = seer.entity_state(ctx, agent)
    per = float(c.events_per_entity)
    out.obs[0] = np.float32(float(st.handled_step) / per)
    out.obs[1] = np.float32(math.log1p(float(st.handled)))
    out.obs[2] = np.float32(float(st.checksum >> np.uint64(40)) * 2.0**-24)
    out.obs[3] = np.float32(st.acc)
    out.reward[0] = np.float32(float(st.handled_step) / per)
    out.info[0] = float(st.handled)
    out.info[1] = float(st.remote_in)
    out.info[2] = float(st.checksum >> np.uint64(11))


@MODEL.publish
def publish(ctx, st, record):
    record.handled = st.handled


@MODEL.global_state
def global_state(ctx, out):
    n = seer.model_sizes(ctx).num_entities
    for e in range(n):
        st = seer.entity_state(ctx, e)
        out[2 * e] = np.float32(st.handled_step)
        out[2 * e + 1] = np.float32(float(st.checksum >> np.uint64(40)) * 2.0**-24)


parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env
