"""The ``--help`` layout of the ``truthlens`` commands: each option's default, where it has one."""

from __future__ import annotations

import argparse


class HelpWithDefaults(argparse.HelpFormatter):
    """``--help`` shows each option's default where it has a meaningful one (not None / False) and
    its help text does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        # A flag (no value: store_true / store_false) has no default worth showing: its default is
        # "the flag is absent", and "(default: True)" beside --no-x reads as if --no-x were on.
        if (action.default in (None, False, argparse.SUPPRESS) or "default" in text or not action.option_strings
                or action.nargs == 0):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"
