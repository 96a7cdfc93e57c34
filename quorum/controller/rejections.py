"""``Rejected``: one item of a multi-item request refused with an error code.

Commands validate each item (a topic, a partition, a config resource) in
helpers that raise ``Rejected``; the command catches it per item and puts the
code and message in that item's answer. It never leaves a command.
"""

from __future__ import annotations

from quorum.wire.error_codes import Errors

__all__ = ["Rejected"]


class Rejected(Exception):
    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
