"""The ``agentcore`` command's entry point: the console script ``agentcore`` runs :func:`main`.

It is a module of its own, outside the package, because importing anything
in ``agentcore`` first imports the whole package (about 0.2 s); a Ctrl-C
during that import would end the command with a traceback. :func:`main`
imports the command inside a ``try``, so that Ctrl-C ends it as one during a
run does (:mod:`agentcore.cli`): the line ``agentcore: interrupted`` on
stderr and exit status 130. ``python -m agentcore`` imports the package
before it runs anything, so this covers the console script only.
"""

import sys

EXIT_INTERRUPTED = 130
"""The exit status after Ctrl-C (the command's ``agentcore.cli.EXIT_INTERRUPTED``)."""


def main() -> int:
    """Import and run :func:`agentcore.cli.main`; its exit status, or 130 when
    Ctrl-C comes while the command is loading (or after the command handled
    one, during its cleanup)."""
    try:
        from agentcore.cli import main as command

        return command()
    except KeyboardInterrupt:
        if sys.stderr is not None:
            sys.stderr.write("agentcore: interrupted\n")
        return EXIT_INTERRUPTED
