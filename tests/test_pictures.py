"""The pictures: `recordio head --grid` (contact sheet) and `recordio bench --plot` (ratio bars).

Each test opens the PNG that the command wrote and checks its size and what is drawn where.
"""

import json

import cv2
import numpy as np
import pytest

import recordio
from recordio.tools.__main__ import main
from recordio.tools.grid import CAPTION, CELL, MARGIN
from recordio.tools.plot import DPI, SUITE_COLOURS, WIDTH_IN, plot_ratios

COLOURS = [(220, 30, 30), (30, 200, 30), (30, 30, 220), (240, 200, 0)]    # RGB
SHAPES = [(40, 40), (40, 80), (90, 30), (200, 200)]                        # (h, w): square, wide, tall, large


def png_of(rgb, h, w):
    ok, buf = cv2.imencode(".png", np.full((h, w, 3), rgb[::-1], np.uint8))   # OpenCV writes BGR
    return buf.tobytes()


@pytest.fixture
def photos(tmp_path):
    """Five rows: four solid-colour PNGs of different shapes and one blob that is no image."""
    rows = [{"image": png_of(c, *s), "label": k} for k, (c, s) in enumerate(zip(COLOURS, SHAPES))]
    rows.append({"image": b"not an image", "label": 1})
    path = str(tmp_path / "photos.mindrecord")
    with recordio.FileWriter(path, shard_num=1) as writer:
        writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}},
                          json.dumps({"label_map": {"red": 0, "green": 1, "blue": 2, "yellow": 3}}))
        writer.write_raw_data(rows)
    return path


def read_png(path):
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert image is not None, f"{path} is not a PNG OpenCV can read"
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def cell_origin(k, columns):
    return (k // columns) * (CELL + CAPTION + 2 * MARGIN) + MARGIN, (k % columns) * (CELL + 2 * MARGIN) + MARGIN


def test_head_grid_draws_each_image_fitted_with_its_caption(photos, tmp_path, capsys):
    png = tmp_path / "sheet.png"
    assert main(["head", photos, "-n", "5", "--grid", str(png)]) == 0
    assert f"wrote {png}" in capsys.readouterr().out
    sheet = read_png(png)
    assert sheet.shape == (2 * (CELL + CAPTION + 2 * MARGIN), 3 * (CELL + 2 * MARGIN), 3)   # 5 cells: 3 x 2
    for k, (colour, (h, w)) in enumerate(zip(COLOURS, SHAPES)):
        top, left = cell_origin(k, 3)
        cell = sheet[top:top + CELL, left:left + CELL].astype(int)
        assert np.abs(cell[CELL // 2, CELL // 2] - colour).max() <= 1, f"cell {k} centre"
        filled = (np.abs(cell - colour).max(axis=2) <= 1)
        scale = CELL / max(h, w)
        assert abs(filled.sum() - round(h * scale) * round(w * scale)) <= 2 * CELL, f"cell {k} area"
        caption = sheet[top + CELL:top + CELL + CAPTION, left:left + CELL]
        assert (caption.max(axis=2) < 100).sum() > 30, f"cell {k} has no caption text"
    wide_top, wide_left = cell_origin(1, 3)
    assert (sheet[wide_top + 5, wide_left + CELL // 2] == 255).all()          # letterbox above the wide image


def test_head_grid_marks_undecodable_images_and_leaves_empty_cells_blank(photos, tmp_path):
    png = tmp_path / "sheet.png"
    assert main(["head", photos, "-n", "5", "--grid", str(png)]) == 0
    sheet = read_png(png)
    top, left = cell_origin(4, 3)
    bad = sheet[top:top + CELL, left:left + CELL]
    assert (bad == 160).all(axis=2).mean() > 0.9 and (bad.max(axis=2) < 60).sum() > 50   # grey with a "?"
    top, left = cell_origin(5, 3)
    assert (sheet[top - MARGIN:, left - MARGIN:] == 255).all()                # no sixth row: blank


def test_head_grid_errors_name_the_field(photos, tmp_path, capsys):
    assert main(["head", photos, "--grid", str(tmp_path / "x.png"), "--image-column", "photo"]) == 1
    err = capsys.readouterr().err
    assert "recordio: error:" in err and "'photo'" in err and "image, label" in err
    assert not (tmp_path / "x.png").exists()


def leftmost_run(line):
    """``(start, length)`` of the first run of True in a 1-D mask."""
    start = int(np.argmax(line))
    stop = np.flatnonzero(~line[start:])
    return start, int(stop[0]) if stop.size else line.size - start


def bar_lengths(png, rgb):
    """Lengths in pixels of the bars of colour ``rgb`` (runs starting at the axis), top to bottom."""
    image = read_png(png).astype(int)
    mask = np.abs(image - np.array(rgb)).max(axis=2) <= 2
    rows = np.flatnonzero(mask.sum(axis=1) > 3)
    bands = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if rows.size else []
    runs = [leftmost_run(mask[band[len(band) // 2]]) for band in bands]
    axis = min((start for start, _ in runs), default=0)
    return [length for start, length in runs if start <= axis + 2]       # legend patches start further right


def hex_rgb(text):
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))


def test_plot_bars_are_proportional_to_the_ratios(tmp_path):
    png = tmp_path / "ratios.png"
    results = [{"name": "a", "value": 1, "ratio": 1.0, "baseline": "x", "suite": "storage"},
               {"name": "b", "value": 2, "suite": "storage"},                         # no ratio: left out
               {"name": "c", "value": 2, "ratio": 2.0, "baseline": "x", "suite": "storage"},
               {"name": "d", "value": 4, "ratio": 4.0, "baseline": "x", "suite": "pipeline"}]
    assert plot_ratios(results, str(png)) == 3
    image = read_png(png)
    assert image.shape[1] == WIDTH_IN * DPI and image.shape[0] >= 2 * DPI
    storage = bar_lengths(png, hex_rgb(SUITE_COLOURS["storage"]))
    pipeline = bar_lengths(png, hex_rgb(SUITE_COLOURS["pipeline"]))
    assert len(storage) == 2 and len(pipeline) == 1
    one, two = storage[0], storage[1]
    assert two == pytest.approx(2 * one, rel=0.03) and pipeline[0] == pytest.approx(4 * one, rel=0.03)


def test_plot_without_any_ratio_says_so(tmp_path):
    png = tmp_path / "none.png"
    assert plot_ratios([{"name": "a", "value": 1, "suite": "storage"}], str(png)) == 0
    image = read_png(png)
    assert bar_lengths(png, hex_rgb(SUITE_COLOURS["storage"])) == []
    assert (image.max(axis=2) < 100).sum() > 100                      # the message is drawn


@pytest.mark.slow
def test_bench_plot_from_the_command_line(tmp_path):
    png, out = tmp_path / "bench.png", tmp_path / "bench.json"
    code = main(["bench", "--suite", "pipeline", "--quick", "--workdir", str(tmp_path),
                 "--json", str(out), "--plot", str(png)])
    assert code == 0
    compared = [r for r in json.loads(out.read_text())["results"] if r.get("ratio")]
    bars = bar_lengths(png, hex_rgb(SUITE_COLOURS["pipeline"]))
    assert len(bars) == len(compared) and min(bars) > 0
