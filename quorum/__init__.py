"""pykraft package."""

__all__: list[str] = []
