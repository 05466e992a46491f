"""``python -m extproc`` is the ``truthlens`` command."""

from extproc.cli import main

raise SystemExit(main())
