"""The process the contract checker runs a model in (``seer_env.check``).

Started by the checker as ``python .../seer_env/_check_child.py FD``, with FD
one end of a socket pair; everything else (the model, its configuration, the
progress record) comes over the socket.  Not a command for users.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    # the seer_env this file belongs to (the checker's), not one found from
    # the current folder; and not this folder as a top-level package root
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    from seer_env.check.child import _child_main

    _child_main(int(sys.argv[1]))
