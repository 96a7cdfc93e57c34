"""The storage layer's exceptions: directories that cannot be formatted or used."""

from __future__ import annotations

__all__ = ["NotFormattedError", "StorageError"]


class StorageError(Exception):
    """A log or metadata directory that cannot be formatted, read or used."""


class NotFormattedError(StorageError):
    """A directory without ``meta.properties``: run ``kraft storage format`` first."""
