"""The offload planner, MindSpore's rules one by one (OFFLOAD.md §1.1)."""

import subprocess
import sys

import pytest

from recordio import transforms, vision
from recordio.errors import PipelineError
from recordio.keys import derive_uid
from recordio.offload.plan import OFFLOADABLE, MapSpec, is_offloadable, plan_offload

FLIP, NORM, CHW = vision.RandomHorizontalFlip(), vision.Normalize([0.5], [0.2]), vision.HWC2CHW()
DECODE, CROP = vision.Decode(), vision.RandomResizedCrop(8)
CAST = transforms.TypeCast("int32")


def spec(uid, ops, column="image", offload=None, output=None):
    cols = [column] if isinstance(column, str) else column
    return MapSpec(uid, list(ops), cols, output, offload)


def plan(*maps, auto=False, zipped=False):
    return plan_offload(list(maps), auto_offload=auto, zip_or_concat=zipped)


def tail_names(p, column="image"):
    return [type(op).__name__ for _, op in p.tail.get(column, [])]


def test_offloadable_names_and_only_recordio_ops():
    assert OFFLOADABLE == {"HWC2CHW", "Normalize", "RandomColorAdjust", "RandomHorizontalFlip",
                           "RandomSharpness", "RandomVerticalFlip", "Rescale", "TypeCast"}

    class Normalize:                       # a user class that only borrows the name
        pass

    assert is_offloadable(NORM) and not is_offloadable(Normalize()) and not is_offloadable(DECODE)


def test_nothing_requested_nothing_offloaded():
    p = plan(spec(0, [DECODE, FLIP]))
    assert p.tail == {} and not p and [m.operations for m in p.host_maps] == [[DECODE, FLIP]]


def test_explicit_offload_moves_the_whole_supported_map_with_op_ids():
    p = plan(spec(3, [FLIP, NORM, CHW], offload=True))
    assert p.host_maps == []
    assert p.tail["image"] == [(derive_uid(3, 0), FLIP), (derive_uid(3, 1), NORM), (derive_uid(3, 2), CHW)]


def test_partially_supported_map_is_split_after_its_last_unsupported_op():
    p = plan(spec(2, [DECODE, FLIP, CROP, NORM, CHW], offload=True))
    assert [m.operations for m in p.host_maps] == [[DECODE, FLIP, CROP]]
    assert p.host_maps[0].uid == 2
    assert p.tail["image"] == [(derive_uid(2, 3), NORM), (derive_uid(2, 4), CHW)]
    assert "split after RandomResizedCrop" in p.explain()


def test_only_the_trailing_run_of_a_columns_last_maps_is_offloaded():
    p = plan(spec(0, [DECODE, FLIP]), spec(1, [CROP]), spec(2, [NORM], offload=True), auto=True)
    assert tail_names(p) == ["Normalize"]
    assert [m.uid for m in p.host_maps] == [0, 1]


def test_consecutive_offloaded_maps_join_in_order():
    p = plan(spec(0, [DECODE, FLIP], offload=True), spec(1, [NORM, CHW], offload=True))
    assert tail_names(p) == ["RandomHorizontalFlip", "Normalize", "HWC2CHW"]
    assert [m.operations for m in p.host_maps] == [[DECODE]]


def test_explicit_offload_blocked_by_a_later_host_map_raises():
    with pytest.raises(PipelineError, match="later map on column 'image'"):
        plan(spec(0, [FLIP], offload=True), spec(1, [CROP]))


def test_maps_on_other_columns_do_not_block():
    p = plan(spec(0, [FLIP], offload=True), spec(1, [CAST], column="label"))
    assert tail_names(p) == ["RandomHorizontalFlip"] and [m.uid for m in p.host_maps] == [1]


@pytest.mark.parametrize("maps,reason", [
    ([spec(0, [FLIP], output=["flipped"], offload=True)], "output_columns"),
    ([spec(0, [FLIP], column=["a", "b"], offload=True)], "2 input columns"),
    ([MapSpec(0, [FLIP], None, None, True)], "no input_columns"),
    ([spec(0, [NORM, DECODE], offload=True)], "last op Decode"),
])
def test_explicit_offload_that_cannot_be_honoured_raises_with_the_reason(maps, reason):
    with pytest.raises(PipelineError, match=reason):
        plan(*maps)


def test_zip_or_concat_refuses_explicit_offload():
    with pytest.raises(PipelineError, match="zipped or concatenated"):
        plan(spec(0, [FLIP], offload=True), zipped=True)
    p = plan(spec(0, [FLIP]), auto=True, zipped=True)
    assert p.tail == {} and "zipped or concatenated" in p.explain()


def test_auto_offload_keeps_refused_maps_on_host_with_reasons():
    p = plan(spec(0, [FLIP], output=["x"]), spec(1, [NORM], column=["a", "b"]), spec(2, [CROP]), auto=True)
    assert p.tail == {} and len(p.host_maps) == 3
    text = p.explain()
    assert "output_columns" in text and "2 input columns" in text and "no device version" in text


def test_auto_offload_offloads_every_tail_and_explicit_false_wins():
    p = plan(spec(0, [DECODE, FLIP, NORM]), spec(1, [CAST], column="label"), auto=True)
    assert tail_names(p) == ["RandomHorizontalFlip", "Normalize"] and tail_names(p, "label") == ["TypeCast"]
    p = plan(spec(0, [DECODE, FLIP, NORM]), spec(1, [CAST], column="label", offload=False), auto=True)
    assert "label" not in p.tail and "offload=False" in p.explain()


def test_explicit_false_map_closes_the_column_for_earlier_maps_under_auto():
    p = plan(spec(0, [FLIP]), spec(1, [NORM], offload=False), auto=True)
    assert p.tail == {} and "later map on column 'image'" in p.explain()


def test_unnamed_input_map_closes_every_column():
    p = plan(spec(0, [FLIP]), MapSpec(1, [CROP], None, None, None), auto=True)
    assert p.tail == {}


def test_explain_is_a_readable_table():
    p = plan(spec(4, [DECODE, CROP, FLIP, NORM], offload=True), spec(5, [CAST], column="label"))
    text = str(p)
    lines = text.splitlines()
    assert lines[0].startswith("Offload plan") and "2 op(s) offloaded" in lines[0]
    assert lines[1].split()[:5] == ["map", "column", "host", "ops", "offloaded"]
    assert "Decode, RandomResizedCrop" in lines[2] and "RandomHorizontalFlip, Normalize" in lines[2]
    assert "offload not requested" in lines[3]


def test_planner_imports_no_torch_or_cv2():
    code = ("import sys; import recordio.offload.plan; "
            "assert 'torch' not in sys.modules and 'cv2' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_host_maps_get_fused_decode_with_unchanged_indices():
    p = plan(spec(0, [DECODE, CROP, FLIP, NORM], offload=True), spec(1, [DECODE, FLIP], column="raw"))
    fused, plain = p.host_maps
    assert [type(op).__name__ for op in fused.operations] == ["_DeferredDecode", "RandomResizedCrop"]
    assert fused.operations[1] is CROP and plain.operations == [DECODE, FLIP]
    assert "Decode, RandomResizedCrop" in p.explain()
