"""The compiled raw-record reader (``codec.read_records``) against msgpack, the reference.

A batch of raw records is read into columns in C; whatever it is not sure of, it declines (None), and
the caller decodes the batch with msgpack. On well-formed records it must read every value msgpack
reads; on random and corrupted records it must either decline or give exactly msgpack's values.
"""

import struct

import msgpack
import numpy as np
import pytest

from recordio.mindrecord import codec

pytestmark = pytest.mark.skipif(codec.BACKEND != "c", reason="the compiled codec is not built")

FIELDS = [("id", "i"), ("score", "f"), ("name", "s"), ("other", "-"), ("big", "i"), ("é", "s")]
INTS = [0, 1, 127, 128, -1, -32, -33, -128, -129, 255, 256, 32767, 32768, 65535, 65536, -32768, -32769,
        2**31 - 1, -2**31, 2**32 - 1, 2**32, 2**63 - 1, -2**63]


def _value(rng, kind):
    pick = rng.integers(0, 8)
    if kind == "i":
        return INTS[rng.integers(0, len(INTS))] if pick < 5 else int(rng.integers(-2**62, 2**62))
    if kind == "f":
        return [0.0, -0.0, 1.5, 2**53, -(2**53), 3, float("inf")][pick] if pick < 7 else float(rng.standard_normal())
    if kind == "s":
        size = [0, 1, 31, 32, 255, 256, 70000, 5][pick]
        return "".join(chr(int(c)) for c in rng.choice([97, 233, 0x4e2d, 0x1f600], size))
    return [None, True, False, 2**64 - 1, -7, 0.25, "x" * 40, b"\x00\xff" * 3][pick]


def _record(rng, fields=FIELDS):
    items = [(name, _value(rng, kind)) for name, kind in fields]
    rng.shuffle(items)
    data = msgpack.packb(dict(items), use_bin_type=True, use_single_float=bool(rng.integers(0, 2)))
    if rng.integers(0, 4) == 0:                               # the same map with a map16 header
        data = b"\xde" + struct.pack(">H", data[0] & 0x0F) + data[1:]
    return data


def _corrupt(rng, data):
    data = bytearray(data)
    how = rng.integers(0, 6)
    if how == 0 and data:
        data[rng.integers(0, len(data))] ^= 1 << int(rng.integers(0, 8))
    elif how == 1 and data:
        data[rng.integers(0, len(data))] = int(rng.integers(0, 256))
    elif how == 2:
        del data[rng.integers(0, len(data) + 1):]
    elif how == 3:
        data += bytes(rng.integers(0, 256, rng.integers(1, 4), dtype=np.uint8))
    elif how == 4:                                           # a key renamed, a key repeated
        data = data.replace(b"\xa2id", b"\xa2ie" if rng.integers(0, 2) else b"\xa4name", 1)
    else:
        data[0:1] = [0x90 | (data[0] & 0x0F)] if data else b""   # a map header made an array
    return bytes(data)


def _reference(records, fields):
    """What msgpack reads, in the compiled reader's form; None where the compiled reader must decline."""
    names = {name for name, _ in fields}
    out = {name: [] for name, kind in fields if kind != "-"}
    for data in records:
        try:
            record = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception:
            return None
        if type(record) is not dict or len(record) != len(names) or set(record) != names:
            return None
        for name, kind in fields:
            value = record[name]
            if kind == "i" and not (type(value) is int and -2**63 <= value < 2**63):
                return None
            if kind == "f" and not (type(value) is float or (type(value) is int and abs(value) <= 2**53)):
                return None
            if kind == "s" and type(value) is not str:
                return None
            if kind == "-" and type(value) not in (type(None), bool, int, float, str, bytes):
                return None
            if kind != "-":
                out[name].append(value)
    return out


def _read(records, fields):
    buf = b"".join(records)
    ends = np.cumsum([len(r) for r in records], dtype=np.int64)
    return codec.read_records(buf, ends - [len(r) for r in records], ends, fields)


def _assert_same(got, want, fields):
    assert (got is None) == (want is None), (got, want)
    if want is None:
        return
    for name, kind in fields:
        if kind == "i":
            assert got[name].dtype == np.int64 and got[name].tolist() == want[name]
        elif kind == "f":
            assert got[name].dtype == np.float64
            assert np.array_equal(got[name], np.array(want[name], np.float64), equal_nan=True)
        elif kind == "s":
            assert got[name] == want[name]


def test_well_formed_records_are_all_read():
    rng = np.random.default_rng(0)
    for _ in range(200):
        records = [_record(rng) for _ in range(int(rng.integers(1, 9)))]
        want = _reference(records, FIELDS)
        if want is None:                          # an int over int64 in a read field: not well formed
            continue
        got = _read(records, FIELDS)
        assert got is not None, records
        _assert_same(got, want, FIELDS)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_corrupted_records_are_declined_or_read_as_msgpack_reads_them(seed):
    rng = np.random.default_rng(100 + seed)
    declined = 0
    for _ in range(1500):
        records = [_record(rng) for _ in range(int(rng.integers(1, 4)))]
        k = int(rng.integers(0, len(records)))
        records[k] = _corrupt(rng, records[k])
        want = _reference(records, FIELDS)
        _assert_same(_read(records, FIELDS), want, FIELDS)
        declined += want is None
    assert 100 < declined < 1500                 # both outcomes were exercised


def test_invalid_utf8_is_declined_in_a_field_not_read_too():
    good = msgpack.packb({"a": 1, "b": "ok"})
    bad = good.replace(b"\xa2ok", b"\xa2\xff\xfe")
    for fields in ([("a", "i"), ("b", "s")], [("a", "i"), ("b", "-")]):
        assert _read([good], fields) is not None
        assert _read([good, bad], fields) is None


def test_each_record_must_end_where_its_range_ends():
    one = msgpack.packb({"a": 5})
    assert _read([one + b"\x00"], [("a", "i")]) is None
    buf = one + one
    got = codec.read_records(buf, np.array([0, len(one)]), np.array([len(one), 2 * len(one)]), [("a", "i")])
    assert got["a"].tolist() == [5, 5]
    assert codec.read_records(buf, np.array([0]), np.array([2 * len(one)]), [("a", "i")]) is None


def test_arguments_are_checked():
    one = msgpack.packb({"a": 5})
    with pytest.raises(ValueError, match="outside"):
        codec.read_records(one, np.array([0]), np.array([len(one) + 1]), [("a", "i")])
    with pytest.raises(ValueError, match="unknown kind"):
        codec.read_records(one, np.array([0]), np.array([len(one)]), [("a", "x")])
