"""The exception hierarchy of seer_env.

Every error the package raises derives from [`SeerError`][seer_env.errors.SeerError]; the ones
caused by bad input also derive from the built-in class a Python user would
catch (``ValueError`` for bad values, ``RuntimeError`` for bad call order):

```python
try:
    env.step({a: 99 for a in env.agents})   # 99: no such choice
except seer_env.InvalidActionError as exc:   # also a ValueError
    print(exc)
```
"""

from __future__ import annotations


class SeerError(Exception):
    """Base class of every seer_env error."""


class ConfigError(SeerError, ValueError):
    """An invalid environment or runtime configuration."""


class ExecutorError(ConfigError):
    """The chosen executor cannot run this model (e.g. lookahead 0 on 'parallel')."""


class InvalidActionError(SeerError, ValueError):
    """An action with the wrong agent, shape, dtype or value. Nothing was changed."""


class UnknownAgentError(InvalidActionError, KeyError):
    """An agent name the env does not have (in an action dict, or asked for its
    spaces).  A `KeyError` too, as a dict lookup of the name would raise."""

    __str__ = Exception.__str__  # the message, not KeyError's quoted repr of it


class StateError(SeerError, RuntimeError):
    """A call in the wrong order (step before reset, step after the episode ended)."""


class AsyncStateError(StateError):
    """A call of the batched env's asynchronous API in the wrong state:
    ``recv()`` with nothing sent, ``send()`` for an instance already in flight,
    a synchronous ``step()`` while sends are in flight.  Nothing was changed."""


class ClosedError(StateError):
    """The environment or runtime was closed."""


class ContractViolation(SeerError, RuntimeError):
    """A model broke the event-locality contract (a bug in the model, not in user input).

    The message names the model, the entity, the event type and both times.
    The instance must be reset before it is stepped again.
    """


class ModelError(SeerError, RuntimeError):
    """A model is unusable or one of its handlers reported a failure (a
    missing handler, a table built against another API version, a handler
    that returned an error code)."""


class BudgetError(SeerError, RuntimeError):
    """A step handled more events than its budget (``max_step_events``): the
    step duration is likely too long for the model's event rate.  The
    instances must be reset."""


class Interrupted(StateError):
    """A call was abandoned on SIGINT (Ctrl-C); the instances must be reset.

    Python raises its own KeyboardInterrupt for the signal as soon as the call
    returns; this error is what remains where the interpreter's handler does
    not raise (a custom SIGINT handler)."""


class SnapshotError(SeerError, ValueError):
    """A snapshot that cannot be restored here: taken of another model or
    configuration, in another snapshot format, on another face, or corrupted
    or truncated bytes.  The message says which; the env was not changed."""


class BuildError(SeerError, RuntimeError):
    """Compiling a model failed.  ``log`` holds the compiler's output and
    ``command`` the command line that failed."""

    def __init__(self, message: str, log: str = "", command: list[str] | None = None) -> None:
        super().__init__(message)
        self.log = log
        self.command = list(command or [])


class MissingExtraError(SeerError, ImportError):
    """An optional part of seer_env needs a package that is not installed;
    the message says which extra installs it (``pip install "seer_env[numba]"``)."""


class OutOfMemoryError(SeerError, MemoryError):
    """Memory for an env's buffers or its runtime could not be had (a process
    memory limit, ``ulimit -v``, or the machine's memory).  The message names
    what was being allocated and its size in bytes; nothing of the env was
    kept (its runtime closed, its buffers freed), so a smaller env can be made
    in the same process.  A `MemoryError` too, for code that catches that:

    ```python
    try:
        env = seer_env.make("pcs_v0", width=256, height=256)
    except MemoryError as exc:   # seer_env.errors.OutOfMemoryError
        print(exc)   # pcs: out of memory allocating the observation buffer (3670016 bytes) ...
    ```
    """


__all__ = [
    "SeerError",
    "ConfigError",
    "ExecutorError",
    "InvalidActionError",
    "UnknownAgentError",
    "StateError",
    "AsyncStateError",
    "ClosedError",
    "ContractViolation",
    "ModelError",
    "BuildError",
    "BudgetError",
    "Interrupted",
    "SnapshotError",
    "MissingExtraError",
    "OutOfMemoryError",
]
