"""``python -m truthlens`` is the ``truthlens`` command."""

from truthlens.cli import main

raise SystemExit(main())
