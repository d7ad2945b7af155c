"""Write docs/hunt_frame.png: one rgb_array frame of Hunt (NumPy + zlib only).

    .venv/bin/python docs/make_hunt_frame.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_aircraft_frame import write_png  # noqa: E402  (the PNG writer of the docs' figures)

from seer_env.envs import hunt_v0  # noqa: E402


def main() -> None:
    env = hunt_v0.parallel_env(width=24, height=18, num_predators=4, num_prey=3,
                               render_mode="rgb_array", max_cycles=100)
    obs, _ = env.reset(seed=7)
    for _ in range(6):  # a few moves drawn within the masks
        if not env.agents:
            break
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
    frame = env.render()
    write_png(HERE / "hunt_frame.png", frame)
    print(f"wrote {HERE / 'hunt_frame.png'} {frame.shape}")
    env.close()


if __name__ == "__main__":
    main()
