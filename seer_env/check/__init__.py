"""The contract checker: is a model safe to run on every executor?

[`check`][seer_env.check.check] runs a model through the passes of `PASSES` and reports
every breach of the event-locality contract it finds, each naming the model,
the handler, the entity, the event type and the simulated time, the rule
broken and how to fix it:

```python
import seer_env
report = seer_env.check("path/to/mymodel", config={"num_agents": 8}, quick=True)
print(report)            # one line per pass, then the findings
assert report.ok
```

```bash
seer-env check path/to/mymodel --set num_agents=8
```

The passes:

1. **isolation** -- the serial executor in checking mode: every handler runs
   with the memory it must not touch protected (other entities' live state,
   the published snapshot, the configuration, the model's static variables)
   and with ``rand()``, ``time()`` and friends watched.  A breach stops the run
   with a message naming exactly what was touched.  The run is then compared
   with a plain serial run: a model whose outputs change with the memory
   layout reads or writes outside its entity.
2. **uninit** -- reads of bytes nobody wrote (`seer_env.check_bounds`):
   a C model is built twice more with every local variable starting as zero
   bytes and as 0xFE bytes; outputs that differ between the two are an
   ``uninitialised`` finding naming the hook, agent, element and step.  The
   passes below then do not report the same differences again as layout,
   order or determinism breaches.
3. **replay** -- two plain serial runs in one process must agree: hidden state
   that survives a run (static or thread-local variables, a C library
   generator) shows here.
4. **order** -- the parallel executor with one partition per entity, visited
   in a fresh random order in every window (and on two threads): a model
   whose outputs depend on the order in which independent events run.
5. **race** -- memory shared between entities' handlers
   (`seer_env.check_race`): the model built with ThreadSanitizer runs on
   the parallel executor (two threads, shuffled order; the optimistic executor
   for lookahead 0) in a child process; a heap block or static several
   handlers write is a ``shared-heap`` or ``data-race`` finding naming both
   hooks, functions and lines.  Skipped, with the reason, for Python models
   and where the compiler has no ThreadSanitizer runtime.
6. **bounds** -- one serial run of a whole episode, its outputs read against
   the model's declared bounds: observations and global states outside them,
   NaN anywhere, infinities where a bound is finite, non-finite rewards and
   infos (``obs-bounds``, ``state-bounds``, ``non-finite``), each named with
   step, instance, agent and element.
7. **matrix** -- the determinism matrix: serial against parallel at threads
   1-4 and oversubscribed (8), batches of 1-3 instances, several seeds,
   random actions; reset runs add masked resets mid-episode.
8. **snapshot** -- a few steps, a snapshot of every instance
   (``Runtime.snapshot``), more steps under random actions, a restore and the
   same steps again, in the same runtime and in a new one on another executor:
   every output must come back bit for bit.  State the model keeps outside
   runtime-owned memory (a static counter, heap memory of its own) is not in
   a snapshot, and shows here as a ``restore`` finding.
9. **lookahead** and the other schedule rules are checked on every
   ``seer_schedule`` call in every pass.

Models with lookahead 0 have no windows: the order pass is skipped for them
(and says so), and the matrix runs the optimistic executor (speculation with rollback)
instead of the parallel one.

Runs.  Every run resets its instances, then steps them under random actions
(Box actions also out of range, to exercise clipping).  In the *main runs*
no instance is reset until all its agents have finished (then it is reset at
once, an autoreset), so with ``steps=N`` the instances live N steps: a breach
that starts late in an episode is met.  The default N is the model's episode,
its ``max_cycles`` (0, no limit, counts as `EPISODE_CAP`), at most
`EPISODE_CAP` steps.  The matrix adds *reset runs*: one instance reset
every `RESET_EVERY` steps (in turn), long enough to reset each instance
twice, on the fewest and the most threads.  The replay pass runs at least a
whole episode, so one serial run meets every step of the first episode even
under ``quick=True`` (seed 0, threads 1, 2 and 8, batches 1 and 3, main runs
of at most `QUICK_STEPS` steps).

The model runs in a child process (one for the whole check, started again
after it died), never in the caller's: a handler that crashes the process (a
wild pointer, ``abort()``, ``exit()``) or never returns becomes a ``crash`` or
``hang`` finding naming the pass, the run and, from a record the checking mode
keeps in memory shared with the checker (``SEER_CHECK_PROGRESS``, see
runtime/check.c), the handler, entity, event type and simulated time; a plain
run that stops is run again up to that step on the serial executor in checking
mode to name them.  The passes after it are skipped.  Each run has a time
budget (``budget``: seconds per run; by default `BUDGET_BASE` seconds
plus `BUDGET_PER_ENTITY_STEP` seconds per entity-step of the run, steps
x instances x entities).  Ctrl-C stops the check and its child at once
(KeyboardInterrupt; ``seer-env check`` exits 130).

Memory.  The child has a memory budget (``memory``; by default
`default_memory`: half the machine's physical memory, at least 1 GiB, at
most what the process's own limits allow), set once the model is loaded as
the limit on its data segment (RLIMIT_DATA: its private writable memory,
heap and mmap alike; not reserved address space, which the runtime's threads
and Numba's compiler take plenty of).  A model that leaks meets the budget
instead of the machine's end: a ``MemoryError``, an
[`OutOfMemoryError`][seer_env.errors.OutOfMemoryError] from the runtime, the
child's memory left within an eighth of the budget after a request, or its
death with that much in use, is a ``memory`` finding naming the budget, what
was in use and the hook during which memory grew most, from a serial rerun in
a new child with every hook watched (the data segment read before and after
each call); the passes after it are skipped.  A model whose loading alone
takes the budget is a ConfigError.  The processes the child starts (the
compiler, the ThreadSanitizer run of the race pass, whose shadow memory is
terabytes of reserved private mappings) run without the budget.  Cost: starting the child
and loading the model in it, about 0.3 s for a C model (1 s for a Python one);
the runs' outputs are compared in the child, so what comes back is small.

The package, by concern (bottom to top): `report` (the rules, findings,
classifying failures), `runs` (a model run, two runs compared), `bounds` and
`race` (the bounds, uninitialised-output and race passes), `passes` (every
pass of `PASSES`), `child` (the process the model runs in, and the protocol),
`runner` (the check itself).

A pass is one entry of `PASSES`: a [`Pass`][seer_env.check.Pass] says which runs it
makes and which rule an output difference from the serial reference breaks,
or is one function run in the child (``Pass.job``); ``Pass.inspect`` adds
findings from each run's outputs.
"""

from __future__ import annotations

from .passes import (
    EPISODE_CAP,
    PASSES,
    QUICK,
    QUICK_STEPS,
    RESET_EVERY,
    JobContext,
    JobOutcome,
    Pass,
    Plan,
    run_budget,
)
from .report import FIXES, CheckReport, Finding, PassResult, classify
from .runner import MEMORY_MIN, check, default_memory, parse_memory
from .runs import run_model

__all__ = ["check", "CheckReport", "Finding", "PassResult", "Pass", "PASSES", "Plan", "FIXES",
           "classify", "run_model", "run_budget", "parse_memory", "default_memory",
           "MEMORY_MIN", "EPISODE_CAP", "QUICK", "QUICK_STEPS",
           "RESET_EVERY", "JobContext", "JobOutcome"]
