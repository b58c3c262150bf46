"""MkDocs hook: let the API reference find the installed remem package, not the ``remem`` command.

Run as the ``mkdocs`` script, Python puts the script's folder first on ``sys.path``; that folder also holds the
``remem`` console script, which griffe would then load instead of the package.
"""

from __future__ import annotations

import os
import sys


def on_startup(**_: object) -> None:
    sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p or os.curdir, "remem"))]
