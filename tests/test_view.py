"""``recordio view``: the JSON API, the pages' content and the safety rules, through Starlette's test
client on a real dataset (real SQLite .db files, real JPEG/PNG bytes). The browser tests are in
tests/test_view_browser.py."""

import io
import json
import os
import re
import shutil

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
pytest.importorskip("PIL")

import recordio
from recordio.tools.__main__ import main

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="window.__svg=1"><script>window.__svg=1</script></svg>'
SCRIPT = "<script>window.__pwned=1</script>"
SPLITS = ["train", "val", "<b>test</b>"]


def image_bytes(i, kind):
    from PIL import Image

    img = Image.new("RGB", (24 + i % 5, 16), (i * 7 % 256, 80, 200 - i % 100))
    out = io.BytesIO()
    img.save(out, kind)
    return out.getvalue()


def make_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        rows.append({"label": np.int32(i % 7), "split": SPLITS[i % 3], "score": np.float64(round(float(rng.random()), 3)),
                     "name": SCRIPT if i == 3 else f"row {i}",
                     "image": image_bytes(i, "PNG" if i % 4 == 1 else "JPEG"),
                     "payload": SVG if i % 5 == 2 else bytes(rng.integers(0, 256, 40, dtype=np.uint8)),
                     "tokens": rng.integers(0, 50_000, 5 + i % 9, dtype=np.int64)})
    return rows


SCHEMA = {"label": {"type": "int32"}, "split": {"type": "string"}, "score": {"type": "float64"},
          "name": {"type": "string"}, "image": {"type": "bytes"}, "payload": {"type": "bytes"},
          "tokens": {"type": "int64", "shape": [-1]}}


def write_dataset(folder, n=60, shards=2):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "data.mindrecord")
    with recordio.FileWriter(path, shards) as writer:
        writer.add_schema(SCHEMA, "a dataset for recordio view")
        writer.add_index(["label", "split", "score"])
        writer.write_raw_data(make_rows(n))
    return path + "0" if shards > 1 else path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("view")))


@pytest.fixture(scope="module")
def client(dataset):
    from starlette.testclient import TestClient

    from recordio.view import create_app

    with TestClient(create_app(dataset), base_url="http://127.0.0.1") as c:
        yield c


def test_overview_api_describes_the_dataset(client, dataset):
    info = client.get("/api/overview").json()
    assert info["rows"] == 60 == recordio.count_rows(dataset)
    assert info["index_fields"] == ["label", "split", "score"]
    assert [s["rows"] for s in info["shards"]] == [30, 30]
    page = client.get("/").text
    assert "a dataset for recordio view" in page and 'id="verify"' in page


def api(client, url, status=200):
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.text[:300])
    return r.json()


def where_url(path, *conditions, **params):
    from urllib.parse import urlencode

    return path + "?" + urlencode([("where", c) for c in conditions] + list(params.items()))


ROWS = make_rows(60)


def expected(predicate):
    return [i for i, r in enumerate(ROWS) if predicate(r)]


FILTERS = [
    (["label=3"], lambda r: r["label"] == 3),
    (["label=3", "split=val"], lambda r: r["label"] == 3 and r["split"] == "val"),
    (["label!=3"], lambda r: r["label"] != 3),
    (["label>=2", "label<5"], lambda r: 2 <= r["label"] < 5),
    (["score>0.5"], lambda r: r["score"] > 0.5),
    (["score<=0.25", "split in train,<b>test</b>"], lambda r: r["score"] <= 0.25 and r["split"] != "val"),
    (["label in 0,6"], lambda r: r["label"] in (0, 6)),
    (['split in ["val"]'], lambda r: r["split"] == "val"),
    (["split=x' OR '1'='1"], lambda r: False),
]


@pytest.mark.parametrize("conditions, predicate", FILTERS, ids=[" & ".join(c) for c, _ in FILTERS])
def test_a_filter_counts_and_pages_the_rows_it_names(client, conditions, predicate):
    want = expected(predicate)
    assert api(client, where_url("/api/count", *conditions))["rows"] == len(want)
    got, offset = [], 0
    while True:
        page = api(client, where_url("/api/rows", *conditions, offset=offset, limit=7))
        assert page["count"] == len(want) and page["total"] == 60
        if not page["rows"]:
            break
        got += [r["row"] for r in page["rows"]]
        offset += 7
    assert got == want


@pytest.mark.parametrize("conditions", [["label=3"], ["label=3", "split=val"], ["split=<b>test</b>"]])
def test_equality_counts_as_recordio_count_where(client, dataset, conditions, capsys):
    args = [a for c in conditions for a in ("--where", c)]
    assert main(["count", dataset, *args]) == 0
    assert api(client, where_url("/api/count", *conditions))["rows"] == int(capsys.readouterr().out)


def test_rows_and_one_row_hold_the_values_of_the_data_files(client, dataset):
    with recordio.FileReader(dataset) as reader:
        want = reader[41]
    page = api(client, "/api/rows?offset=40&limit=3")
    assert [r["row"] for r in page["rows"]] == [40, 41, 42]
    cells = page["rows"][1]["fields"]
    assert cells["label"] == {"kind": "number", "value": int(want["label"])}
    assert cells["image"]["kind"] == "image" and cells["image"]["length"] == len(want["image"])
    assert cells["payload"]["hex"] == want["payload"][:32].hex() and cells["payload"]["kind"] == "bytes"
    full = api(client, "/api/row/41")["fields"]
    assert full["tokens"]["values"] == want["tokens"].tolist() and full["tokens"]["dtype"] == "int64"
    assert full["name"]["text"] == want["name"]
    assert client.get("/blob/41/image").content == want["image"]
    assert api(client, "/api/rows?offset=1000")["rows"] == []
    assert "out of range" in api(client, "/api/row/60", 404)["error"]


def test_page_and_thumbnail_sizes_are_bounded(client):
    from PIL import Image

    assert len(api(client, "/api/rows?limit=100000")["rows"]) == 60        # 60 rows: all, under the bound
    from recordio.view.source import MAX_PAGE

    assert api(client, "/api/rows?limit=100000")["limit"] == MAX_PAGE
    big = Image.open(io.BytesIO(client.get("/thumb/0/image?size=100000").content))
    assert max(big.size) <= 512
    assert api(client, "/api/rows?limit=abc", 400)["error"].startswith("expected an integer")
    assert client.get("/jump?row=abc").status_code == 400
    assert client.get("/jump?row=7", follow_redirects=False).headers["location"] == "/row/7"


def test_facets_count_values_and_a_facet_link_filters(client):
    facets = api(client, "/api/facets")
    labels = {v["value"]: v["count"] for v in facets["label"]["values"]}
    assert labels == {k: sum(r["label"] == k for r in ROWS) for k in range(7)}
    assert sum(b["count"] for b in facets["score"]["histogram"]) == 60
    assert sum(b["count"] for b in facets["label"]["histogram"]) == 60
    narrowed = api(client, where_url("/api/facets/split", "label=3"))["split"]
    assert sum(v["count"] for v in narrowed["values"]) == labels[3]
    html = client.get("/facets").text
    links = re.findall(r'class="facet-value" href="([^"]+)">([^<]+)</a>', html)
    for href, text in links:
        if "where=label" in href and text == "4":
            page = api(client, "/api" + href.replace("&amp;", "&"))
            assert page["count"] == labels[4] and all(r["fields"]["label"]["value"] == 4 for r in page["rows"])
            break
    else:
        raise AssertionError("no facet link for label=4")
    bins = re.findall(r'<a href="(/rows\?[^"]*where=score[^"]*)"><title>[^:]+: (\d+)</title>', html)
    assert bins
    for href, n in bins:
        assert api(client, "/api" + href.replace("&amp;", "&"))["count"] == int(n)


def test_a_field_of_many_values_gets_a_histogram_and_no_value_counts(dataset, monkeypatch):
    from recordio.view import source

    monkeypatch.setattr(source, "FACET_SCAN", 10)
    with _app_on(dataset) as c:
        facets = api(c, "/api/facets")
    assert facets["score"]["sampled"].startswith("more than 10 distinct values") and facets["score"]["values"] == []
    assert sum(b["count"] for b in facets["score"]["histogram"]) == 60
    assert facets["label"]["sampled"] is None and len(facets["label"]["values"]) == 7


def test_the_facets_come_with_the_page_once_counted(dataset):
    with _app_on(dataset) as c:
        pending = c.get("/rows?where=label%3D2").text
        assert 'data-src="/facets?where=label%3D2"' in pending and "facet-value" not in pending
        assert "facet-value" in c.get("/facets?where=label%3D2").text
        ready = c.get("/rows?where=label%3D2").text
        assert "data-src" not in ready and "facet-value" in ready


def test_every_value_is_escaped(client):
    for url in ("/rows", "/facets", "/row/3", "/rows?view=grid", where_url("/rows", "split=<b>test</b>")):
        html = client.get(url).text
        assert "<script>window" not in html and "<b>test</b>" not in html, url
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in client.get("/row/3").text
    assert "&lt;b&gt;test&lt;/b&gt;" in client.get("/facets").text


def test_an_svg_payload_is_never_served_as_an_image(client):
    page = client.get("/row/2").text
    assert "/thumb/2/payload" not in page and "/blob/2/payload" in page
    r = client.get("/blob/2/payload")
    assert r.content == SVG and r.headers["content-type"] == "application/octet-stream"
    assert r.headers["x-content-type-options"] == "nosniff" and "attachment" in r.headers["content-disposition"]
    assert client.get("/thumb/2/payload").status_code == 415
    assert client.get("/blob/2/label").status_code == 404


@pytest.mark.parametrize("url", ["/", "/rows", "/row/0", "/api/rows", "/thumb/0/image", "/blob/0/image",
                                 "/static/view.js", "/nowhere"])
def test_every_response_carries_the_security_headers(client, url):
    r = client.get(url)
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert "default-src 'none'" in r.headers["content-security-policy"]


def test_requests_naming_another_host_or_posting_across_sites_are_refused(client):
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.post("/api/verify").status_code == 403


@pytest.mark.parametrize("condition, words", [("nope=1", "'nope' is not an indexed field"),
                                              ("name=row 1", "'name' is not an indexed field"),
                                              ("label=1 OR 1=1", "expected a int32 value"),
                                              ("label=99999999999", "expected a int32 value"),
                                              ("label~3", "expected FIELD=VALUE")])
def test_a_bad_filter_is_a_400_naming_it(client, condition, words):
    assert words in api(client, where_url("/api/rows", condition), 400)["error"]
    page = client.get(where_url("/rows", condition))
    assert page.status_code == 400 and words.replace("'", "&#39;") in page.text


def test_verify_runs_shard_by_shard_and_reports_each(client):
    state = client.post("/api/verify", headers={"X-Recordio-View": "1"}).json()
    assert state["state"] == "running" and state["total"] == 2
    client.app.state.verify.join(60)
    done = api(client, "/api/verify")
    assert done["state"] == "done" and done["ok"] and done["done"] == 2
    assert [s["rows"] for s in done["shards"]] == [30, 30] and all(s["checksums"] for s in done["shards"])


def _folder_state(folder):
    return {n: (os.stat(os.path.join(folder, n)).st_mtime_ns, open(os.path.join(folder, n), "rb").read())
            for n in sorted(os.listdir(folder))}


def test_a_session_writes_nothing(tmp_path):
    from starlette.testclient import TestClient

    from recordio.view import create_app

    path = write_dataset(str(tmp_path / "d"))
    before = _folder_state(tmp_path / "d")
    with TestClient(create_app(path), base_url="http://127.0.0.1") as c:
        for url in ("/", "/rows", "/rows?where=label>2", "/row/5", "/thumb/5/image", "/api/facets"):
            assert c.get(url).status_code == 200
        c.post("/api/verify", headers={"X-Recordio-View": "1"})
        c.app.state.verify.join(60)
    assert _folder_state(tmp_path / "d") == before


def _app_on(path):
    from starlette.testclient import TestClient

    from recordio.view import create_app

    return TestClient(create_app(path), base_url="http://127.0.0.1")


def test_a_corrupt_shard_shows_its_error_and_the_server_goes_on(tmp_path):
    path = write_dataset(str(tmp_path / "d"))
    other = path[:-1] + "1"
    with open(other, "r+b") as f:                  # the second shard's header: no longer JSON
        f.seek(8)
        f.write(b"\xff\xfe garbage")
    with _app_on(path) as c:
        page = c.get("/")
        assert page.status_code == 500 and 'id="error"' in page.text and "data.mindrecord1" in page.text
        assert c.get("/rows").status_code == 500 and 'id="error"' in c.get("/rows").text
        assert "error" in api(c, "/api/rows", 500)
        c.post("/api/verify", headers={"X-Recordio-View": "1"})
        c.app.state.verify.join(60)
        state = api(c, "/api/verify")
        assert state["state"] == "done" and not state["ok"]
        assert any("data.mindrecord1" in p["file"] for s in state["shards"] for p in s["problems"])
        assert c.get("/static/view.css").status_code == 200


def test_a_header_naming_a_file_outside_the_folder_is_refused(tmp_path):
    from recordio.tools import fuzz_mutations as mutations

    path = write_dataset(str(tmp_path / "d"))
    shutil.copy(path, tmp_path / "x")
    for shard in (path, path[:-1] + "1"):
        header, data = mutations.read_header(shard)
        header["shard_addresses"][1] = "../x"
        mutations.write_header(shard, header, data)
    with _app_on(path) as c:
        page = c.get("/rows")
        assert page.status_code == 500 and "not a plain file name" in page.text
        assert c.get("/row/0").status_code == 500
        assert c.get("/blob/0/image").status_code == 500


def test_a_db_symlink_leading_out_is_refused(tmp_path):
    path = write_dataset(str(tmp_path / "d"))
    shutil.move(path + ".db", tmp_path / "elsewhere.db")
    os.symlink(tmp_path / "elsewhere.db", path + ".db")
    with _app_on(path) as c:
        assert c.get("/rows").status_code == 500 and 'id="error"' in c.get("/rows").text


def _db_with(tmp_path, *statements):
    """The ``.db`` of a real one-shard dataset (100 rows, ``label`` indexed), with ``statements`` run on it."""
    import sqlite3

    data = tmp_path / "x.mindrecord"
    for leftover in (data, tmp_path / "x.mindrecord.db"):
        leftover.unlink(missing_ok=True)
    with recordio.FileWriter(str(data)) as writer:
        writer.add_schema({"label": {"type": "int32"}, "data": {"type": "bytes"}})
        writer.add_index(["label"])
        writer.write_raw_data([{"label": i % 3, "data": b"x"} for i in range(100)])
    db = str(tmp_path / "x.mindrecord.db")
    conn = sqlite3.connect(db)
    for s in statements:
        conn.execute(s)
    conn.commit()
    conn.close()
    return db


def test_the_db_connection_is_read_only_attaches_nothing_runs_no_code_and_is_timed(tmp_path):
    from recordio.errors import IndexFileError
    from recordio.view import db

    conn = db.connect(_db_with(tmp_path))
    for statement in ("INSERT INTO INDEXES (ROW_ID) VALUES (1000)", f"ATTACH '{tmp_path / 'y.db'}' AS y", "PRAGMA query_only=OFF; DELETE FROM INDEXES"):
        with pytest.raises(IndexFileError):
            db.query(conn, "x.db", statement)
    assert not (tmp_path / "y.db").exists()
    heavy = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    with pytest.raises(IndexFileError, match="interrupted after 0.2 s"):
        db.query(conn, "x.db", heavy, seconds=0.2)
    conn.close()
    for extra in ("CREATE VIEW v AS SELECT 1", "CREATE TRIGGER t AFTER INSERT ON INDEXES BEGIN SELECT 1; END"):
        with pytest.raises(IndexFileError, match="plain tables only"):
            db.connect(_db_with(tmp_path, extra))


def test_the_host_rule_and_the_missing_extra(tmp_path):
    import subprocess
    import sys

    from conftest import TESTS, child_pythonpath
    from recordio.view.server import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    code = ("import sys; sys.modules['starlette'] = None\n"
            "from recordio.tools.__main__ import main; sys.exit(main(['view', 'x.mindrecord']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=TESTS,
                         env={**os.environ, "PYTHONPATH": child_pythonpath()})
    assert out.returncode == 1 and 'pip install "mindrecordio[view]"' in out.stderr
    light = subprocess.run([sys.executable, "-c", "import sys, recordio.view; print('starlette' in sys.modules)"],
                           capture_output=True, text=True, cwd=TESTS, env={**os.environ, "PYTHONPATH": child_pythonpath()})
    assert light.stdout.strip() == "False"


def test_the_command_serves_and_prints_its_url(tmp_path):
    import subprocess
    import sys
    import urllib.request

    from conftest import TESTS, child_pythonpath

    path = write_dataset(str(tmp_path / "d"))
    proc = subprocess.Popen([sys.executable, "-m", "recordio.tools", "view", path, "--port", "0"], cwd=TESTS,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": child_pythonpath()})
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        with urllib.request.urlopen(url + "api/count?where=label%3D3", timeout=30) as r:
            counted = json.loads(r.read())
        assert counted["rows"] == 9 == sum(counted["shards"]) and counted["where"] == ["label=3"]
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.slow
def test_a_dataset_in_s3_pages_filters_and_verifies(tmp_path, dataset):
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    from starlette.testclient import TestClient

    from recordio.tools.remote_servers import moto_server
    from recordio.view import create_app

    folder = os.path.dirname(dataset)
    with moto_server() as s3:
        fs = s3.bucket("view")
        for name in os.listdir(folder):
            fs.put_file(os.path.join(folder, name), f"view/ds/{name}")
        app = create_app("s3://view/ds/data.mindrecord0", storage_options=s3.options, cache_dir=str(tmp_path / "cache"))
        with TestClient(app, base_url="http://127.0.0.1") as c, _app_on(dataset) as local:
            info = api(c, "/api/overview")
            assert [s["file"] for s in info["shards"]] == ["s3://view/ds/data.mindrecord0", "s3://view/ds/data.mindrecord1"]
            for url in ("/api/rows?offset=20&limit=10", where_url("/api/rows", "label>=4", "split=val"),
                        "/api/row/7", where_url("/api/facets", "score<0.5")):
                assert api(c, url) == api(local, url), url
            assert "&lt;script&gt;" in c.get("/row/3").text
            assert c.get("/blob/41/image").content == local.get("/blob/41/image").content
            c.post("/api/verify", headers={"X-Recordio-View": "1"})
            c.app.state.verify.join(120)
            state = api(c, "/api/verify")
            assert state["ok"] and [s["file"] for s in state["shards"]] == [s["file"] for s in info["shards"]]


def test_a_page_over_http_fetches_only_its_rows(tmp_path):
    from starlette.testclient import TestClient

    from recordio.tools.remote_servers import RangeServer
    from recordio.view import create_app

    pytest.importorskip("fsspec")
    path = write_dataset(str(tmp_path / "d"), n=400, shards=1)
    size = os.path.getsize(path)
    with RangeServer(tmp_path / "d") as http:
        app = create_app(http.url + "/data.mindrecord", cache_dir=str(tmp_path / "cache"))
        with TestClient(app, base_url="http://127.0.0.1") as c:
            rows = api(c, "/api/rows?offset=200&limit=10")["rows"]
            assert [r["row"] for r in rows] == list(range(200, 210))
            assert api(c, where_url("/api/count", "label=3"))["rows"] == sum(i % 7 == 3 for i in range(400))
        fetched = 0
        for method, name, rng in http.log:
            if method == "GET" and name.endswith(".mindrecord") and rng:
                a, b = map(int, rng.removeprefix("bytes=").split("-"))
                fetched += b + 1 - a
    rows_bytes = sum(len(r["image"]) + len(r["payload"]) + r["tokens"].nbytes for r in make_rows(400))
    assert 0 < fetched < rows_bytes / 4 < size, (fetched, rows_bytes, size)      # the header and 10 rows' blocks
