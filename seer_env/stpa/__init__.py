"""STPA: choose the executor and thread pool of a runtime from its first real steps.

With ``threads="auto"`` (the default) and the parallel executor, a
[`Runtime`][seer_env.registry.Runtime] starts on one thread and an [`Stpa`][seer_env.stpa.Stpa]
controller, which the runtime's owner attaches ([`attach`][seer_env.stpa.attach]: the envs and
[`seer_env.registry.Runtime`][seer_env.registry.Runtime] do), runs its first steps as the
*preflight*.  Outputs never depend on the executor or the thread count, so the
preflight steps are ordinary steps of the user's run: nothing is perturbed, nothing is thrown away.

The preflight, step by step.  It probes only as much as the run can win back:

1. **Features.**  The first two steps run on the serial executor (the runtime
   is put on it when the controller is attached); the second is timed (a
   process's first step is cold, 5-30x a warm one) and the counters give
   events per step.  Together with the static features (entities, agents,
   instances, lookahead, entity size, cores, cache sizes from sysfs) they form
   [`Features`][seer_env.stpa.Features].
2. **Candidates** (`candidate_set`): the serial executor and the parallel
   executor with 1..cores threads (never more threads than entities).  The serial
   executor is a real candidate: `Runtime.set_executor` moves the pending
   events between the executors' queues between two steps (both executors order
   an entity's events by the same (time, key), so the switch is invisible in
   the outputs).  A model with lookahead 0 has the serial executor and the
   optimistic one.
3. **Tiny steps** (under ``tiny_ns``, 20 us): no pool's synchronisation could
   pay, and the one-thread executors differ by a few percent of such a step:
   the serial executor runs, untimed, and the preflight is over.
4. **Waiting until the run can pay** (``probe_share``): probing the pools costs
   about a millisecond beyond the steps' own work (threads started, a traced
   step, the controller's bookkeeping).  It starts once that is at most 5% of
   the run's step time, counting at least an episode (``max_cycles``) once one
   was reset; until then the serial executor runs untimed
   ([`Stpa.deferred`][seer_env.stpa.Stpa.deferred]).  Steps of a millisecond are
   probed at once, short runs of short steps never.
5. **Trace** (when there is more than one thread to consider): one step runs
   traced on the largest pool, without a record per event; `summarize_trace`
   turns it into events per window, handler cost, barrier cost and idle time
   ([`TraceSummary`][seer_env.stpa.TraceSummary]).
6. **Plan** (`probe_plan`): `predict_step_ns` estimates each
   candidate's step time from the summary and the features; pools predicted to
   be much slower than the best prediction are not timed at all (a tiny env on
   a many-core machine never pays for timing 16 threads), nor is the serial
   executor where a pool is predicted much faster than one thread.
7. **Timing**: the planned candidates are visited forth and back (ABC CBA
   ABC), grouped by executor, so an executor switch, which moves every pending
   event, comes about once a round; each visit runs one warm-up step after a
   switch and ``k`` timed steps (``k`` from the step's length, so a visit lasts
   long enough to time).  What is timed is what the user pays: the
   *iteration*, from the end of the call before to the end of the step, so the
   caller's own work between two steps (a policy's forward pass, a learner's
   update), done beside the candidate's threads, counts; a pool whose threads
   slow the caller's computation loses by what it costs there.  The two
   fastest within ``tie`` of each other get ``extra_rounds`` more rounds, as
   do the fastest and a candidate whose last visit ran faster than the
   fastest's median (still warming up: a pool's threads and records settle
   over its first steps; or the host changed under the probe).
8. **Choice** ([`select`][seer_env.stpa.select], a pure function of the timings and features): the
   fastest median iteration wins; a candidate with fewer threads within ``margin`` of
   the fastest is preferred (it leaves cores free for the policy), and on one
   thread the serial executor is the choice (the parallel or optimistic
   executor on one thread, timed to scale the pools' predictions, runs the
   same events through the pool's phases: where it timed faster, the sample
   was noise), also untimed where the probe pruned it for the pools and
   company then left one thread (the run's share of the cores).  The
   decision is written to the decision cache once the run has paid for the
   write (or when the runtime closes).  A later run starts from it without a
   preflight; where the runner-up was within 1.25x it confirms the choice as
   soon as ``probe_share`` of its step time covers a confirmation.

A step that does not run (an action the runtime refuses, an error, an
interrupt) changes nothing here: its visit stays first in line, no counter
moves, a switch made for it is undone, and the next step runs that visit.
A candidate the runtime cannot switch to (out of memory or threads) is left
out of the probe.

After the preflight the controller checks every ``check_every`` steps (more
apart where a check would cost over 1% of the steps) whether
the workload drifted ([`drift`][seer_env.stpa.drift]: events per step changed by ``drift_factor``
or fewer than ``alive_drop`` of the agents are alive) and then re-probes the
chosen configuration and its neighbours (the one-thread candidates and the
pools next to it; for the serial executor the smallest pool, so a run that
chose it on tiny steps times a pool once the load has grown).  A re-probe that confirms the choice
doubles the gap to the next allowed one.

**In company.**  Between the checks, while a pool runs, the controller looks
every few steps (a clock read: under half a percent of the iterations; at least
10 ms of iterations apart, so that load coming and going faster averages out)
at the user's iterations, step call to step call.  Company that comes after the
decision (a CPU burner, another env process, a learner's threads) slows them:
once they are 25% over the first iterations after the decision (and over one
thread's at the decision), or 5% where the caller's own work is most of an
iteration, and the pool's own steps slowed too (5%; 25% where other runtimes
of the process were called between them: the other envs of a round-robin
loop, whose probes slow the round but no choice of ours changes), a *company
re-probe* times the pool against the one-thread candidates and falls back
within a few windows when the pool loses.  A window that spans a pause
of the caller's (the learner's update, an evaluation: over 4x the windows so
far) and the cold window after it do not count, nor do a run's windows in
which another run of the process probed: it judges on new windows once that
probe is done, so the envs of one loop, which see a moment of the host's
together, re-probe one at a time (the first one's re-probe often outlasts
the moment).  Pools
that lost in company are not written off: the confirmation re-probes time
them again once the run has paid for it (the pool company kept the run
from too; none beyond the run's share of the cores while other processes
keep the rest busy: they would run on theirs), so the pool comes back when
the company leaves.  A preflight (or a company re-probe's fall-back) whose
pools ran over 1.5x behind what its traced step predicts, with no company
seen (the host's other tenants, a moment that passes), or none but the
pool's threads waiting for a core while nothing on the machine was busy for
long (other processes under a quarter of a core, this process's other
threads idle: `seer_env.stpa.company.passing_company`), and a company
re-probe that leaves the pool for fewer threads with no company seen (the
slowdown that began it was such a moment too), is timed again a
quarter of a second later, and, while the confirmations find the same,
again after twice as many steps each time until the confirmation budget's
own wait is shorter: a slow moment that outlasts the first recheck costs
seconds, not the budget's wait, and a trace that always mispredicts a few
confirmations.  Company a probe sees: other processes' CPU time
(``/proc``), the caller's work slower beside a pool than beside one thread,
and the pool's other threads waiting for a core during its timed steps
(the kernel's ``run_delay`` of each, from
``/proc/self/task/<tid>/schedstat``: a quarter of the steps' time or more;
alone they wait microseconds, and the host's other tenants, who take the
virtual CPU itself, leave no such trace).  A decision
remembered from an earlier run is confirmed at once when the run's
iterations are slower than the remembered ones or other processes hold a
core: made alone, it is not trusted in company.  Where
company kept a pool from winning, the reason's limit says which
(`seer_env.stpa.company`): ``"company: another thread pool in this process
spins on the same cores (the caller's work between steps took ... beside
parallel-2's threads, ... beside the serial executor; ...)"`` or ``"company:
another process holds a core (other processes kept 1.0 of the machine's cores
busy ...)"`` (the first also from the waits alone, where no other process
was busy: ``"(parallel-2's other threads waited 1034 us a step for a core,
its steps took 1740 us, while other processes kept 0.0 of the machine's
cores busy; ...)"``, where this process's other threads -- neither the caller
nor the pool -- kept a tenth of a core busy or more; where they did not,
``"another process holds a core part of the time (... other processes kept
0.4 of the machine's cores busy during the probe, this process's other
threads 0.0)"`` or ``"something outside this process holds a core (...)"``),
led, where a pool's windows mostly ran on the calling thread
alone during its timed steps (`Runtime.stats`'s ``alone_windows``), by
``"parallel-2's other threads found no free core (83% of its windows ran on
the calling thread alone)"``.

Everything is inspectable:

```python
from seer_env.envs import pcs_v0
env = pcs_v0.parallel_env(width=32, height=32)      # threads="auto"
env.reset(seed=0)
for _ in range(100):
    env.step({a: 0 for a in env.agents})
st = env.runtime.stpa
print(st.executor, st.threads, st.reason)
print(st.decision.medians_ns, st.features, st.trace_summary)
```

and logged through `logging` (logger ``seer_env.stpa``, INFO: decisions,
DEBUG: the evidence).

The package, by concern: `seer_env.stpa.controller` is the controller (`Stpa`,
`attach`): it runs the steps and switches the runtime, and hands the work to
its parts, each with its own state: `seer_env.stpa.probe` (the probe's steps:
features, trace, timing, pruning, the pools' probe put off),
`seer_env.stpa.monitor` (the checks after a decision: drift, load regimes,
confirmations, company) and `seer_env.stpa.decision` (deciding, and starting from and
writing to the decision cache); `seer_env.stpa.cache` remembers its decisions
across processes (`DecisionCache`); the cost model it consults -- the value
types and the pure functions of the measurements
([`candidate_set`][seer_env.stpa.candidate_set], `summarize_trace`,
`predict_step_ns`, `probe_plan`, `select`, `drift`, ...) -- is
`seer_env.stpa.cost`, and what it says of company, `seer_env.stpa.company`.
The public names of the controller, the cache and the cost model are
re-exported here.
"""

# The package by concern, bottom to top: the cost model (pure functions of the
# measurements), the decision cache, the controller's parts (probe, monitor,
# decision), the controller.  The public names are seer_env.stpa's.
from .cache import DecisionCache
from .controller import FixedChoice, Stpa, attach, describe, run_workload
from .cost import (
    SERIAL,
    Candidate,
    Decision,
    Features,
    Load,
    TraceSummary,
    cache_sizes,
    candidate_set,
    drift,
    limiting_factor,
    neighbours,
    predict_step_ns,
    probe_plan,
    regime,
    select,
    summarize_trace,
)
from .options import check_options

__all__ = [
    "attach",
    "Candidate",
    "Decision",
    "DecisionCache",
    "describe",
    "Features",
    "FixedChoice",
    "Load",
    "SERIAL",
    "Stpa",
    "TraceSummary",
    "cache_sizes",
    "candidate_set",
    "check_options",
    "drift",
    "limiting_factor",
    "neighbours",
    "regime",
    "predict_step_ns",
    "probe_plan",
    "run_workload",
    "select",
    "summarize_trace",
]
