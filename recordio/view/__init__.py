"""``recordio view``: a read-only local web app to browse, filter and check a MindRecord dataset.

:func:`create_app` builds the app (a Starlette application with server-rendered Jinja2 pages and a
JSON API under ``/api/``); :func:`serve` runs it with uvicorn. Both need the ``view`` extra
(``pip install "mindrecordio[view]"``); importing this package does not load them. docs/view.md
describes the pages, the API and the safety rules.
"""

from __future__ import annotations

__all__ = ["create_app", "serve"]


def create_app(path, *, storage_options=None, cache_dir=None, allowed_hosts=None):
    """The Starlette app serving the dataset ``path`` (a data file, or a URL read through the remote
    reader); ``allowed_hosts`` are the Host header values it answers (default: loopback names)."""
    from recordio.view.app import build

    return build(path, storage_options=storage_options, cache_dir=cache_dir, allowed_hosts=allowed_hosts)


def serve(path, *, host="127.0.0.1", port=8765, open_browser=False, storage_options=None, cache_dir=None,
          announce=print):
    """Serve ``path`` on ``host:port`` until interrupted (``port=0`` picks a free one); ``announce`` gets
    the URL and any warning."""
    from recordio.view.server import run

    return run(path, host=host, port=port, open_browser=open_browser, storage_options=storage_options,
               cache_dir=cache_dir, announce=announce)
