"""``python -m agentcore``: the same as the ``agentcore`` command (see :mod:`agentcore.cli`)."""

from agentcore.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
