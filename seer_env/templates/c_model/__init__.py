"""__NAME__: agents on a ring pass tokens (a seer model; ``seer-env new __NAME__`` wrote it).

Agents (``"agent_<i>"``) sit on a ring.  Each starts with ``tokens_per_agent``
tokens; a token is one event chain.  Every step an agent chooses
(``Discrete(3)``) where the tokens it receives go next: 0 keep (back to
itself after an exponential delay), 1 pass right, 2 pass left (a neighbour
receives them at least ``lookahead`` later; a neighbour that is done takes
none).  Its reward is the tokens it received in the step, per
``tokens_per_agent``; it is done (terminated) once it has received ``goal``
tokens.  Observation: ``[tokens this step / tokens_per_agent, received /
goal, right neighbour's received / goal, share of the instance's tokens]``.

The configuration keys, defaults and ranges are declared in ``__NAME__.c``
(``seer-env info path/to/__NAME__`` lists them).

Example::

    import seer_env
    model = seer_env.sdk.load("path/to/__NAME__")     # builds on first use
    env = model.parallel_env(num_agents=16)
    obs, infos = env.reset(seed=0)
    while env.agents:
        obs, rew, term, trunc, infos = env.step({a: 1 for a in env.agents})
"""

from seer_env.sdk import declare

# Everything about the model's sizes, configuration and names comes from its
# C table; this declaration adds what C cannot say (e.g. render=, a function
# env -> (H, W, 3) uint8 image of instance 0).
MODEL = declare(__name__)

parallel_env = MODEL.parallel_env  # PettingZoo ParallelEnv
vector_env = MODEL.vector_env  # num_envs instances as arrays
agent_vector_env = MODEL.agent_vector_env  # Gymnasium VectorEnv, one sub-env per agent
env = MODEL.env  # PettingZoo AEC env
