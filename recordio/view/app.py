"""The Starlette app: server-rendered pages and the JSON API behind them (docs/view.md).

=========================  ==================================================================
``/``                      overview: description, schema, shards, the verify button
``/rows``                  rows (``?where=`` filters, ``offset``, ``limit``, ``view=grid``), facets
``/row/N``                 one row, every field in full (``?where=`` kept in its links)
``/jump?row=N``            redirects to ``/row/N``
``/blob/N/FIELD``          a bytes field: JPEG/PNG as ``image/jpeg``/``image/png``, else a download
``/thumb/N/FIELD``         a JPEG/PNG field as a thumbnail (``?size=``, at most 512 pixels)
``/api/overview``          the overview as JSON (``describe`` of the dataset)
``/api/rows``              a page of rows as JSON (same parameters as ``/rows``)
``/api/row/N``             one row as JSON
``/api/count``             ``{"rows": N, "shards": [...]}`` of a filter
``/api/facets[/FIELD]``    value counts (and histograms) of the indexed fields among the matches
``/api/verify``            GET: the verify run's progress; POST (header X-Recordio-View): start it
=========================  ==================================================================
"""

from __future__ import annotations

import os
import urllib.parse

import contextlib

from recordio.errors import RecordIOError
from recordio.view.extra import requires_view

with requires_view():
    import jinja2
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

from recordio.view import images, render, templates
from recordio.view.checks import VerifyJob
from recordio.view.source import DEFAULT_PAGE, MAX_PAGE, Source

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
           "Referrer-Policy": "no-referrer", "Cross-Origin-Resource-Policy": "same-origin"}
OPS = ["=", "!=", "<", "<=", ">", ">=", "in"]
LOOPBACK = ["127.0.0.1", "localhost", "::1", "[::1]"]
_DATA_ERRORS = (RecordIOError, OSError, ValueError, IndexError)


class SecurityHeaders:
    """ASGI middleware: every response carries :data:`HEADERS`."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.decode("latin-1").lower() not in {h.lower() for h in HEADERS}]
                headers += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def build(path, *, storage_options=None, cache_dir=None, allowed_hosts=None):
    source = Source(path, storage_options=storage_options, cache_dir=cache_dir)
    env = jinja2.Environment(loader=jinja2.DictLoader(templates.TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    for name in templates.TEMPLATES:            # compiled now, not on the first page
        env.get_template(name)
    views = Views(source, env, os.fspath(path) if not isinstance(path, list) else ", ".join(map(str, path)))
    routes = [Route("/", views.overview), Route("/rows", views.rows), Route("/row/{n:int}", views.row),
              Route("/jump", views.jump), Route("/facets", views.facets), Route("/blob/{n:int}/{field}", views.blob),
              Route("/thumb/{n:int}/{field}", views.thumb),
              Route("/static/view.css", lambda r: Response(templates.CSS, media_type="text/css")),
              Route("/static/view.js", lambda r: Response(templates.SCRIPT, media_type="text/javascript")),
              Route("/api/overview", views.api_overview), Route("/api/rows", views.api_rows),
              Route("/api/row/{n:int}", views.api_row), Route("/api/count", views.api_count),
              Route("/api/facets", views.api_facets), Route("/api/facets/{field}", views.api_facets),
              Route("/api/verify", views.api_verify, methods=["GET", "POST"])]
    hosts = list(allowed_hosts or LOOPBACK)
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        source.close()

    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders),
                                               Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
                    lifespan=lifespan)
    app.state.source = source
    app.state.verify = views.verify
    return app


class Query:
    """The parameters every page keeps in its links: ``where`` (list), ``view``, ``limit``, ``offset``."""

    def __init__(self, request=None):
        if request is None:                 # the parameters of a request whose own do not parse
            self.where, self.view, self.limit, self.offset = [], None, DEFAULT_PAGE, 0
            return
        params = request.query_params
        self.where = [w for w in params.getlist("where") if w.strip()]
        added = params.get("field"), params.get("op"), params.get("value")
        if all(a is not None for a in added) and added[2].strip():          # the filter form's new condition
            field, op, value = added
            self.where.append(f"{field} in {value}" if op == "in" else f"{field}{op}{value}")
        self.view = params.get("view") if params.get("view") in ("grid",) else None
        self.limit = _int(params.get("limit"), DEFAULT_PAGE, 1, MAX_PAGE)
        self.offset = _int(params.get("offset"), 0, 0, 1 << 62)

    def link(self, path, **changes):
        values = {"where": self.where, "view": self.view, "limit": self.limit if self.limit != DEFAULT_PAGE else None,
                  "offset": self.offset or None}
        values.update(changes)
        pairs = [(k, v) for k, v in values.items() if v not in (None, [], 0)]
        text = urllib.parse.urlencode(pairs, doseq=True)
        return path + ("?" + text if text else "")


def _int(text, default, low, high):
    if text is None or text == "":
        return default
    try:
        return max(low, min(int(text), high))
    except ValueError:
        raise ValueError(f"expected an integer, got {text[:40]!r}") from None


class Views:
    """The pages and the API over one :class:`Source`."""

    def __init__(self, source, env, name):
        self.source, self.env, self.name = source, env, name
        self.verify = VerifyJob(source)

    # --- pages ------------------------------------------------------------------------------------

    def page(self, request, template, status=200, **context):
        query = context.pop("query", None) or _safe_query(request)
        context.setdefault("error", self.source.error)
        values = {"dataset": self.name, "link": query.link, "where": query.where, "view": query.view,
                  "title": self.name, **context}
        html = self.env.get_template(template).render(**values)
        return HTMLResponse(html, status_code=status)

    def overview(self, request):
        try:
            info = self.source.info() if self.source.ok else None
        except _DATA_ERRORS as exc:
            return self.page(request, "overview", 500, info=None, name=self.name, error=_said(exc))
        return self.page(request, "overview", 200 if self.source.ok else 500, info=info,
                         name=os.path.basename(self.name))

    def rows(self, request):
        try:
            query = Query(request)
            if "field" in request.query_params:     # the filter form: its condition goes into ?where=
                return RedirectResponse(query.link("/rows", offset=None), status_code=303)
            data = self._rows(query, full=False, facets=True)
        except _DATA_ERRORS as exc:
            empty = dict(rows=[], count=0, total=0, offset=0, limit=DEFAULT_PAGE, fields=[], facets=[],
                         index_fields=[], image_field=None, ops=OPS)
            return self.page(request, "rows", _status(exc), error=_said(exc), **empty)
        return self.page(request, "rows", query=query, ops=OPS, **data)

    def row(self, request):
        n = request.path_params["n"]
        query = _safe_query(request)
        total, cells, status, error = 0, None, 200, {}
        try:
            total = self.source.rows
            cells = render.row(self._read(n, total), full=True)
        except _DATA_ERRORS as exc:
            status, error = _status(exc), {"error": _said(exc)}
        back = (n // query.limit) * query.limit if not query.where else 0
        return self.page(request, "row", status, query=query, row=n, total=total, cells=cells, back=back,
                         title=f"row {n}", **error)

    def facets(self, request):
        """The facets of ``/rows`` as an HTML fragment (the page fetches it when they were not ready)."""
        try:
            query = Query(request)
            facets = self._facets(self.source.conditions(query.where))
        except _DATA_ERRORS as exc:
            facets = [{"field": "", "error": _said(exc)}]
            query = Query()
        html = self.env.get_template("facets").render(facets=facets, link=query.link, where=query.where)
        return HTMLResponse(html)

    def jump(self, request):
        query = _safe_query(request)
        try:
            n = _int(request.query_params.get("row"), 0, 0, 1 << 62)
        except ValueError as exc:
            return Response(f"row: {exc}", status_code=400, media_type="text/plain")
        return RedirectResponse(query.link(f"/row/{n}", offset=None), status_code=303)

    def blob(self, request):
        data = self._bytes(request)
        if isinstance(data, Response):
            return data
        mime = render.image_type(data)
        if mime:
            return Response(data, media_type=mime)
        name = f"row{request.path_params['n']}-{request.path_params['field']}.bin"
        return Response(data, media_type="application/octet-stream",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    def thumb(self, request):
        data = self._bytes(request)
        if isinstance(data, Response):
            return data
        try:
            side = _int(request.query_params.get("size"), images.THUMB, 16, images.MAX_THUMB)
            out, mime = images.thumbnail(data, side)
        except ValueError as exc:
            return Response(str(exc), status_code=415, media_type="text/plain")
        return Response(out, media_type=mime, headers={"Cache-Control": "max-age=3600"})

    # --- API --------------------------------------------------------------------------------------

    def api_overview(self, request):
        if not self.source.ok:
            return JSONResponse({"error": self.source.error}, status_code=500)
        try:
            return JSONResponse(self.source.info())
        except _DATA_ERRORS as exc:
            return JSONResponse({"error": _said(exc)}, status_code=500)

    def api_rows(self, request):
        try:
            data = self._rows(Query(request), full=False, facets=False)
        except _DATA_ERRORS as exc:
            return JSONResponse({"error": _said(exc)}, status_code=_status(exc))
        rows = [{"row": r["row"], "fields": r["cells"], **({"error": r["error"]} if r["error"] else {})}
                for r in data["rows"]]
        return JSONResponse({k: data[k] for k in ("count", "total", "offset", "limit", "where")} | {"rows": rows})

    def api_row(self, request):
        n = request.path_params["n"]
        try:
            return JSONResponse({"row": n, "fields": render.row(self._read(n, self.source.rows), full=True)})
        except _DATA_ERRORS as exc:
            return JSONResponse({"error": _said(exc)}, status_code=_status(exc))

    def api_count(self, request):
        try:
            query = Query(request)
            shards = self.source.shard_counts(self.source.conditions(query.where))
        except _DATA_ERRORS as exc:
            return JSONResponse({"error": _said(exc)}, status_code=_status(exc))
        return JSONResponse({"rows": sum(shards), "shards": shards, "where": query.where})

    def api_facets(self, request):
        try:
            query = Query(request)
            conditions = self.source.conditions(query.where)
            fields = [request.path_params["field"]] if "field" in request.path_params else self.source.index_fields
            facets = {f: self.source.facet(f, conditions) for f in fields}
        except _DATA_ERRORS as exc:
            return JSONResponse({"error": _said(exc)}, status_code=_status(exc))
        return JSONResponse(facets)

    async def api_verify(self, request):
        if request.method == "POST":
            if request.headers.get("x-recordio-view") != "1":
                return JSONResponse({"error": "POST /api/verify needs the header X-Recordio-View: 1"}, status_code=403)
            return JSONResponse(self.verify.start())
        return JSONResponse(self.verify.state())

    # --- helpers ----------------------------------------------------------------------------------

    def _read(self, n, total):
        if not 0 <= n < total:
            raise IndexError(f"row {n} is out of range: the dataset has {total} rows")
        return self.source.read(n)

    def _rows(self, query, full, facets):
        source = self.source
        conditions = source.conditions(query.where)
        count, total = source.count(conditions), source.rows
        numbers = source.page_rows(conditions, query.offset, query.limit)
        rows = []
        for n in numbers:
            try:
                rows.append({"row": n, "cells": render.row(source.read(n), full), "error": None})
            except _DATA_ERRORS as exc:
                rows.append({"row": n, "cells": {}, "error": _said(exc)})
        first = next((r for r in rows if not r["error"]), None)
        image_field = None
        if first is not None:
            image_field = next((f for f, c in first["cells"].items() if c["kind"] == "image"), None)
        return {"rows": rows, "count": count, "total": total, "offset": query.offset, "limit": query.limit,
                "where": query.where, "fields": list(source.schema), "index_fields": source.index_fields,
                "image_field": image_field, "facets": self._ready_facets(conditions) if facets else []}

    def _ready_facets(self, conditions):
        """The facets when every one is computed already, else None (the page fetches /facets)."""
        fields = self.source.index_fields
        if not all(self.source.facet_ready(f, conditions) for f in fields):
            return None
        return self._facets(conditions)

    def _facets(self, conditions):
        shown = []
        for field in self.source.index_fields:
            try:
                shown.append(_facet_view(self.source.facet(field, conditions)))
            except _DATA_ERRORS as exc:
                shown.append({"field": field, "error": _said(exc)})
        return shown

    def _bytes(self, request):
        n, field = request.path_params["n"], request.path_params["field"]
        try:
            if field not in self.source.schema or self.source.schema[field]["type"] != "bytes":
                return Response(f"{field!r} is not a bytes field", status_code=404, media_type="text/plain")
            value = self._read(n, self.source.rows)[field]
        except _DATA_ERRORS as exc:
            return Response(_said(exc), status_code=_status(exc), media_type="text/plain")
        if len(value) > images.MAX_BYTES:
            return Response(f"field {field!r} of row {n} holds {len(value)} bytes, more than this viewer serves "
                            f"({images.MAX_BYTES})", status_code=413, media_type="text/plain")
        return value


def _facet_view(facet):
    """A facet with what the template draws: link texts, bar widths and heights."""
    values = [{**v, "text": _text(v["value"])} for v in facet["values"] if v["value"] is not None]
    view = {**facet, "values": values, "top": max([v["count"] for v in values] or [1]), "error": None}
    hist = facet.get("histogram") or []
    if hist:
        peak = max(b["count"] for b in hist) or 1
        view["bar"] = 200 / len(hist)
        view["histogram"] = [{**b, "height": round(48 * b["count"] / peak, 1),
                              "label": f"{_text(b['low'])} … {_text(b['high'])}",
                              "where": [f"{facet['field']}>={_text(b['low'])}",
                                        f"{facet['field']}{'<=' if b['closed'] else '<'}{_text(b['high'])}"]}
                             for b in hist]
    return view


def _text(value):
    return repr(value) if isinstance(value, float) else str(value)


def _safe_query(request):
    try:
        return Query(request)
    except ValueError:
        return Query()


def _said(exc):
    return str(exc) if isinstance(exc, (RecordIOError, ValueError, IndexError)) else f"{type(exc).__name__}: {exc}"


def _status(exc):
    """404 for a row out of range, 500 when the dataset does not read, 400 for a bad request."""
    if isinstance(exc, IndexError):
        return 404
    return 500 if isinstance(exc, (RecordIOError, OSError)) else 400
