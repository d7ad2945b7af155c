"""Write docs/aircraft_frame.png: one rgb_array frame of Aircraft (NumPy + zlib only).

    .venv/bin/python docs/make_aircraft_frame.py
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from seer_env.envs import aircraft_v0


def write_png(path: Path, img: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 array as an 8-bit RGB PNG."""
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    path.write_bytes(png)


def main() -> None:
    env = aircraft_v0.parallel_env(num_uavs=64, num_targets=48, render_mode="rgb_array",
                                   threads=1)
    obs, _ = env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(12):
        acts = {}
        for a in env.agents:
            o = obs[a]
            acts[a] = np.clip(0.4 * rng.uniform(-1, 1, 3)
                              + [0.0, 0.0, 2.0 * (0.3 - o[2]) - 2.0 * o[5]], -1, 1)
        obs, *_ = env.step(acts)
    out = Path(__file__).resolve().parent / "aircraft_frame.png"
    write_png(out, env.render())
    env.close()
    print(out)


if __name__ == "__main__":
    main()
