"""tools/bench_kernels_paired.py: two trees' compiled kernels in one process, a row per case with A's time
beside B's, and a note where their outputs differ."""

import os
import shutil
import types

import pytest

from recordio.tools import bench_kernels_paired as paired
from recordio.vision import color_kernels, crop_chain, decode

pytestmark = pytest.mark.skipif(color_kernels.compiled_kernels() is None or decode._jpeg is None,
                                reason="the C kernels or the region decoder are not built")


def tree(root, name, chain=False):
    """A source tree holding this installation's built kernels (and the crop chain: ``chain``), as a checkout
    built in place holds them."""
    folder = root / name / "recordio" / "vision"
    folder.mkdir(parents=True)
    for module in (color_kernels.compiled_kernels(), decode._jpeg) + ((crop_chain.compiled_chain(),) if chain else ()):
        shutil.copy(module.__file__, folder / os.path.basename(module.__file__))
    return str(root / name)


@pytest.mark.skipif(not crop_chain.available(), reason="the crop chain is not built")
def test_two_trees_give_a_row_per_case_with_both_times(tmp_path, capsys):
    a, b = tree(tmp_path, "a"), tree(tmp_path, "b", chain=True)     # b makes a train image's pixels in one call
    assert paired.main(["--paired", a, b, "--rounds", "2", "--calls", "1", "--images", "2",
                        "--json", str(tmp_path / "rows.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 + len(paired.ORDERS)
    assert "decode_box: 2 train boxes" in lines[0] and "resize: 2 train boxes" in lines[1]
    assert "colour steps none" in lines[2] and "colour steps SCB" in lines[-2]
    assert "train images" in lines[-1] and "2 boxes" in lines[-1]
    # the same kernels give the same bytes; so do the one call and the three calls it replaces
    assert not [line for line in lines if "different bytes" in line]
    import json
    rows = json.loads((tmp_path / "rows.json").read_text())["results"]
    assert all(r["value"] > 0 and r["baseline_value"] > 0 and r["ratio"] > 0 for r in rows)


def test_different_outputs_are_named(tmp_path, monkeypatch):
    a, b = tree(tmp_path, "a"), tree(tmp_path, "b")
    load = paired.load_kernels

    def load_b_off_by_one(path, tag):
        found = load(path, tag)
        if path == b:
            kernels = found["_kernels"]

            def resize(img, out, *args):
                kernels.resize(img, out, *args)
                out[0, 0, 0] ^= 1

            found["_kernels"] = types.SimpleNamespace(resize=resize, adjust_levels=kernels.adjust_levels)
        return found

    monkeypatch.setattr(paired, "load_kernels", load_b_off_by_one)
    rows = paired.rows(types.SimpleNamespace(paired=[a, b], rounds=1, calls=1, images=2))
    differ = [r["name"] for r in rows if "different bytes" in r["note"]]
    assert differ == ["resize: 2 train boxes -> 224x224",
                      "train images: decode, resize, colour BCS, level run, 2 boxes (one call with _chain)"]


def test_a_tree_without_built_kernels_is_refused(tmp_path, capsys):
    (tmp_path / "bare" / "recordio").mkdir(parents=True)
    with pytest.raises(SystemExit):
        paired.main(["--paired", tree(tmp_path, "a"), str(tmp_path / "bare")])
    assert "is not built there" in capsys.readouterr().err
