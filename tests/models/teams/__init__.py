"""teams: agent groups with their own spaces, action masks and multi-discrete
actions (a test model; see teams.c)."""

from seer_env.sdk import declare

MODEL = declare(__name__, warnings_as_errors=True)
parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
agent_vector_env = MODEL.agent_vector_env
env = MODEL.env
