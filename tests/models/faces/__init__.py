"""faces: agent names and bounds made invalid on demand (a test model; see faces.c)."""

from seer_env.sdk import declare

MODEL = declare(__name__, warnings_as_errors=True)
parallel_env = MODEL.parallel_env
vector_env = MODEL.vector_env
