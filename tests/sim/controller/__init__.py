"""Seeded simulation of the controller state machine across failovers (issue 4)."""

__all__: list[str] = []
