"""Write docs/pcs_frame.png: the channel load of PCS's grid, one rgb_array frame.

    .venv/bin/python docs/make_pcs_frame.py

A 16x16 grid with the daily call profile on, run with no guard
channels (action 0 everywhere, classic PCS) to the profile's peak (t = 360); the
frame is PCS's own render: each cell's occupancy (busy channels / channels)
from dark blue (idle) to yellow (every channel busy), a red frame around the
cells that dropped a handoff in the last step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from make_aircraft_frame import write_png

from seer_env.envs import pcs_v0


def main() -> None:
    env = pcs_v0.parallel_env(width=16, height=16, profile_amplitude=0.8,
                              render_mode="rgb_array", threads=1)
    env.reset(seed=7)
    guard = {a: np.int64(0) for a in env.possible_agents}
    for _ in range(18):   # 18 steps of 20 simulated minutes: t = 360, the rate's peak
        env.step(guard)
    frame = env.render()
    busy = float(env.runtime.obs[0][:, 0].mean())
    out = Path(__file__).resolve().parent / "pcs_frame.png"
    write_png(out, frame)
    env.close()
    print(out, frame.shape, f"mean occupancy {busy:.2f}")


if __name__ == "__main__":
    main()
