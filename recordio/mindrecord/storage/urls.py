"""Which paths are URLs (a dataset behind a store) and which are local files."""

import re

__all__ = ["is_url"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(path) -> bool:
    """Whether ``path`` (or the first of a list) is a URL rather than a local path."""
    if isinstance(path, (list, tuple)):
        return bool(path) and is_url(path[0])
    return isinstance(path, str) and bool(_URL.match(path))
