"""traffic: traffic-signal control on a grid of intersections (a seer example model).

A ``width x height`` grid of signalised intersections, one agent each
(``"int_<index>"``, ``index = row * width + col``).  Every intersection has four
incoming approaches (cars from N, E, S, W), each a queue of at most
``queue_capacity`` cars.  Cars enter at the grid's edge (a Poisson stream per edge
approach), wait for green, leave one
per ``headway`` seconds, go straight or turn, and reach the next intersection
``travel_time`` (+ jitter) seconds later, or leave the grid.  A car is held
back while the link it would take may be full (spillback).

Every step (``step_duration`` seconds) an agent chooses its signal phase
(``Discrete(2)``: 0 north-south green, 1 east-west green); a change costs
``switch_time`` seconds of all-red.  Observation (15 floats in [0, 1]): its 4
queues / capacity, the phase one-hot, the time since its last switch / (6
steps), the upstream neighbours' queues heading its way and the downstream
neighbours' queues its cars join (0 at the edge).  Reward: minus the step's
mean queued cars / (4 * queue_capacity).  An intersection holding more than
``gridlock`` cars at a step's end is terminated (minus ``gridlock_penalty``) and
runs on under fixed-time control.  ``README.md`` has the details;
``seer-env info examples/traffic`` lists every configuration key.

Example::

    import seer_env
    model = seer_env.sdk.load("examples/traffic")     # builds on first use
    env = model.parallel_env(width=4, height=4)
    obs, infos = env.reset(seed=0)
    k = 0
    while env.agents:                                 # 360 steps: one simulated hour
        k += 1
        obs, rew, term, trunc, infos = env.step({a: k % 2 for a in env.agents})
"""

from seer_env.sdk import declare

# Sizes, configuration, agent names and space bounds come from traffic.c's
# model table; this declaration adds the env's docs.
MODEL = declare(__name__)

parallel_env = MODEL.parallel_env  # PettingZoo ParallelEnv
vector_env = MODEL.vector_env  # num_envs instances as arrays
agent_vector_env = MODEL.agent_vector_env  # Gymnasium VectorEnv, one sub-env per agent
env = MODEL.env  # PettingZoo AEC env
