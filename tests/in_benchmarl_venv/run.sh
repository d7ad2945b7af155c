#!/usr/bin/env bash
# BenchMARL's clients in a venv of their own (.venv-benchmarl): BenchMARL 1.5.2
# pins TorchRL below 0.12 (our venv has the newest), so the task
# (seer_env.benchmarl) and SeerTorchEnv at TorchRL 0.11 are tested here, the
# lower end of the TorchRL versions we support (tests/test_torchrl_face.py
# runs at the newest in the main venv).  BenchMARL's other pins: torchvision
# and av serve its video logging only, which the task turns off, so they are
# left out (a torchvision for this CPU torch build is not on the index);
# BenchMARL itself goes in with --no-deps and its imports' packages beside it.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=.venv-benchmarl
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q torch==2.13.0
"$VENV/bin/python" -m pip install -q "torchrl==0.11.1" "tensordict>=0.11,<0.12" tqdm hydra-core \
  pytest hypothesis setuptools wheel "cffi>=1.16" "gymnasium>=1.1,<2" "pettingzoo>=1.24"
"$VENV/bin/python" -m pip install -q --no-deps benchmarl==1.5.2
"$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e .
"$VENV/bin/python" -c "import torchrl, benchmarl; print('TorchRL', torchrl.__version__, \
'BenchMARL', benchmarl.__version__)"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/in_benchmarl_venv tests/test_torchrl_face.py "$@"
