"""``python -m remem.core.service``: run the local service (clients spawn it this way)."""

from .server import main

raise SystemExit(main())
