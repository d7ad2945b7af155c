"""Chrome / Perfetto traces of what every worker thread did.

`chrome_trace` turns a runtime's trace records (``Runtime.trace_records()``)
into the Trace Event Format (JSON object with ``traceEvents``) that
https://ui.perfetto.dev and ``chrome://tracing`` open.  One process per runtime,
one thread track per worker (``worker 0`` is the calling thread), and:

* ``window`` spans (args: window start in simulated time, events handled),
* one span per handled event, named by the model's event type
  (args: instance, entity, simulated time),
* ``act``, ``boundary`` and ``reset`` phases,
* ``barrier wait`` spans: a worker waiting for the next phase because every
  chunk of the current one was claimed (recorded when a claim ends the wait;
  waits that end with the call are not recorded, since the worker may still
  be waiting when the call returns),
* optionally a ``python`` track with one span per ``step`` call, so the
  time between native calls (the Python layer, the policy) shows too.

`trace_env` runs an env and returns such a trace; the command line is:

```bash
seer-env trace pcs_v0 --steps 20 -o trace.json --set width=16 --set height=16
seer-env trace phold_v0 --steps 5 --threads 2 -o phold.json
```

Tracing off costs nothing measurable: the event loop checks one
thread-local pointer per entity visit (``python benchmarks/bench_suite.py trace-overhead``
measures it against a build without the tracing code).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._bind.runtime import Runtime, trace_kinds
from ..faces.gym_vector import random_batched_actions

PHASE_NAMES = {"act": "act", "boundary": "boundary", "init": "reset", "window": "window",
               "barrier": "barrier wait"}


def chrome_trace(runtime: Runtime, records: Sequence[np.ndarray] | None = None,
                 step_spans: Sequence[tuple[int, int, int]] = (),
                 metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """Trace Event Format dict of ``records`` (default: the runtime's current records).

    Args:
        runtime: the Runtime (for event type names and the model name).
        records: per-worker structured arrays of ``seer_env._bind.runtime.trace_dtype()``.
        step_spans: ``(step index, t0_ns, t1_ns)`` of host step calls
            (``time.monotonic_ns()``, the clock of the records).
        metadata: extra values for ``otherData``.
    """
    recs = list(runtime.trace_records() if records is None else records)
    starts = [int(r["t0_ns"].min()) for r in recs if len(r)]
    starts += [t0 for _, t0, _ in step_spans]
    base = min(starts) if starts else 0
    pid = 1
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
         "args": {"name": f"seer runtime: {runtime.model} ({runtime.executor})"}},
    ]
    names: dict[int, str] = {}

    def us(ns: int) -> float:
        return (int(ns) - base) / 1000.0

    active = runtime.threads
    kinds = trace_kinds()
    for tid, r in enumerate(recs):
        label = ("worker 0 (caller)" if tid == 0
                 else f"worker {tid}" if tid < active else f"worker {tid} (parked)")
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": label}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})
        track: list[dict[str, Any]] = []
        for rec in r:
            kind = kinds.get(int(rec["kind"]), "unknown")
            t0, t1 = int(rec["t0_ns"]), int(rec["t1_ns"])
            if kind == "event":
                et = int(rec["type"])
                if et not in names:
                    names[et] = runtime.event_name(et) or f"event {et}"
                ev: dict[str, Any] = {
                    "name": names[et], "cat": "event",
                    "args": {"instance": int(rec["instance"]), "entity": int(rec["entity"]),
                             "sim_time": float(rec["sim_time"])}}
            elif kind == "window":
                ev = {"name": "window", "cat": "window",
                      "args": {"sim_start": float(rec["sim_time"]), "events": int(rec["count"])}}
            elif kind == "rollback":
                ev = {"name": "rollback", "cat": "rollback",
                      "args": {"instance": int(rec["instance"]), "entity": int(rec["entity"]),
                               "back_to_sim_time": float(rec["sim_time"]),
                               "handlings_undone": int(rec["count"])}}
            elif kind == "barrier":
                ev = {"name": "barrier wait", "cat": "barrier", "args": {}}
                if t1 == t0:
                    track.append({"name": "barrier arrive", "cat": "barrier", "ph": "i",
                                  "s": "t", "ts": us(t0), "pid": pid, "tid": tid})
                    continue
            else:
                ev = {"name": PHASE_NAMES.get(kind, kind), "cat": "phase",
                      "args": {"sim_time": float(rec["sim_time"]), "events": int(rec["count"])}}
            ev.update({"ph": "X", "ts": us(t0), "dur": (t1 - t0) / 1000.0, "pid": pid,
                       "tid": tid})
            track.append(ev)
        # parents (longer spans) before children that start at the same time
        track.sort(key=lambda e: (e["ts"], -e.get("dur", 0.0)))
        events.extend(track)
    if step_spans:
        tid = len(recs)
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": "python: step calls"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                       "args": {"sort_index": -1}})
        for k, t0, t1 in sorted(step_spans, key=lambda s: s[1]):
            events.append({"name": f"step {k}", "cat": "python", "ph": "X", "ts": us(t0),
                           "dur": (t1 - t0) / 1000.0, "pid": pid, "tid": tid,
                           "args": {"step": int(k)}})
    other = {"model": runtime.model, "executor": runtime.executor, "threads": active,
             "pool_threads": len(recs),
             "dropped_records": runtime.trace_dropped(), "clock": "CLOCK_MONOTONIC"}
    other.update(metadata or {})
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def trace_env(env_name: str, steps: int, threads: int | str = "auto", num_envs: int = 1,
              seed: int = 0, capacity: int = 1 << 18, config: dict[str, Any] | None = None,
              log: Any = None) -> dict[str, Any]:
    """Run ``env_name`` for ``steps`` traced steps under random actions (each group's
    kind, within the action masks, as ``seer-env run`` draws them); return the trace dict.

    With ``threads="auto"`` the env first runs untraced until STPA has decided,
    then the decision is fixed for the traced steps (its reason is in
    ``otherData``).  ``capacity`` is the record limit per worker.
    """
    from ..registry import env_module

    venv = env_module(env_name).vector_env(num_envs, threads=threads, **(config or {}))
    rt = venv.runtime
    rng = np.random.default_rng(seed)

    def actions() -> Any:
        # seer-env run's random policy: each group's kind, within the masks of
        # the last outputs (a dict group -> array for a model with groups)
        return random_batched_actions(venv, rng)

    meta: dict[str, Any] = {"env": env_name, "num_envs": num_envs, "steps": steps,
                            "config": {k: repr(v) for k, v in (config or {}).items()}}
    try:
        venv.reset(seed=seed)
        st = rt.stpa
        if st is not None:
            warm = 0
            while st.decision is None and warm < 5000:
                venv.step(actions())
                warm += 1
            meta["stpa"] = st.as_dict()
            meta["stpa_warmup_steps"] = warm
            rt.set_executor(rt.executor, rt.threads)  # keep the choice fixed while tracing
            if log:
                log(f"STPA ({warm} untraced steps): {st.reason}")
        rt.trace(capacity)
        spans = []
        for k in range(steps):
            a = actions()
            t0 = time.monotonic_ns()
            venv.step(a)
            spans.append((k, t0, time.monotonic_ns()))
        out = chrome_trace(rt, step_spans=spans, metadata=meta)
        rt.trace(0)
    finally:
        venv.close()
    return out


def write_trace(trace: dict[str, Any], path: str) -> None:
    """Write a trace dict as JSON."""
    with open(path, "w") as f:
        json.dump(trace, f, separators=(",", ":"))


__all__ = ["chrome_trace", "trace_env", "write_trace"]
