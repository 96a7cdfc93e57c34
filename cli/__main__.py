"""``python -m cli``: the ``kraft`` command without the installed entry point
(launchers start nodes as ``sys.executable -m cli server-start CONFIG``)."""

from cli.main import main

__all__: list[str] = []

main()
