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
    return path + "0"


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
