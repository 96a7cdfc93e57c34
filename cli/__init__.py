"""The ``kraft`` command line (a thin click layer over the library)."""

from cli.main import main

__all__ = ["main"]
