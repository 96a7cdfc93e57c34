"""The controller state machine: metadata records, images, and the commands that
turn requests into records (event-sourced; see ``quorum.controller.controller``)."""

__all__: list[str] = []
