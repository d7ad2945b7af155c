"""wreck: a broken test model (see wreck.c)."""

from seer_env.sdk import declare

MODEL = declare(__name__, warnings_as_errors=True)
