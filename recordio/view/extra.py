"""The ``view`` extra: a missing package of it becomes a MissingExtraError naming the pip install."""

from __future__ import annotations

import contextlib

from recordio.errors import MissingExtraError

PACKAGES = {"starlette": "Starlette", "jinja2": "Jinja2", "uvicorn": "uvicorn", "PIL": "Pillow",
            "multipart": "python-multipart"}


@contextlib.contextmanager
def requires_view():
    """Turn a missing package of the ``view`` extra imported in the block into MissingExtraError."""
    try:
        yield
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in PACKAGES:
            raise
        raise MissingExtraError(f'recordio view needs {PACKAGES[root]}: pip install "mindrecordio[view]"',
                                name=exc.name) from exc
