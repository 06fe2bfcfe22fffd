"""The ``view`` extra: a missing package of it becomes a MissingExtraError naming the pip install."""

from __future__ import annotations

from recordio.extras import requires


def requires_view():
    """Turn a missing package of the ``view`` extra imported in the block into MissingExtraError."""
    return requires("recordio view", "view")
