"""``python -m agentcore``: the same as the ``agentcore`` command (see :mod:`agentcore.integrations.cli`)."""

from agentcore.integrations.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
