"""The family CLIs' first lines: signals are handled before TensorFlow loads (seconds of
imports), so a SIGTERM or Ctrl-C during start-up says what it did instead of a silent 143."""

from __future__ import annotations

from models.core.errors import exit_on_signals


def run_family(family: str) -> None:
    """`python -m models.<family>`: the shared CLI (models.core.main), imported only now."""
    exit_on_signals("stopped while starting up; nothing was saved")
    from models.core.main import main

    main(family=family)
