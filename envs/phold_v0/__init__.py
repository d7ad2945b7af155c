"""PHOLD as an environment: the standard PDES benchmark, exposed through the same API.

Each entity is an agent (``"entity_<i>"``).  On each event an entity schedules
one new event, to itself or, with probability ``remote``, to a uniformly
random entity, at ``(t + lookahead) + scale * Exp(mean)``.  An agent's action
(``Discrete(3)``) sets ``scale`` (0: 1.0, 1: 0.5, 2: 2.0) for its future
events; its observation is ``[events handled last step / events_per_entity,
log1p(total handled), checksum bits / 2**24, work accumulator]`` and its reward
the first of those.  ``README.md`` (beside this file) has the details; the
configuration keys, defaults and ranges are the model's parameters
(``MODEL.config_help()``).

Example::

    from seer_env.envs import phold_v0
    env = phold_v0.parallel_env(num_entities=64, remote=0.5, threads=2)
    obs, infos = env.reset(seed=1)
    obs, rew, term, trunc, infos = env.step({a: 0 for a in env.agents})
"""

from __future__ import annotations

from ...sdk import declare

MODEL = declare(__name__, warnings_as_errors=True)

parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env
