"""Encrypted MindRecord (MindSpore's set_enc_key / set_enc_mode / set_dec_mode), both ways with MindSpore 2.10."""

import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import recordio
from recordio.errors import FormatError
from recordio.mindrecord import encryption
from recordio.mindrecord import FileReader, FileWriter, count_rows, set_dec_mode, set_enc_key, set_enc_mode

KEY = "abcdefghijklmnop01234567"


@pytest.fixture(autouse=True)
def plain_afterwards():
    yield
    set_enc_key(None)
    set_enc_mode("AES-GCM")
    set_dec_mode(None)


def write(path, n=12, shards=1):
    with FileWriter(path, shards) as writer:
        writer.add_schema({"a": {"type": "int32"}, "b": {"type": "bytes"}, "v": {"type": "float32", "shape": [2]}},
                          "encrypted")
        writer.add_index(["a"])
        writer.write_raw_data([{"a": i, "b": f"secret-{i}".encode(), "v": np.full(2, i, np.float32)}
                               for i in range(n)])


@pytest.mark.slow
def test_round_trip_and_nothing_readable_on_disk(tmp_path):
    path = str(tmp_path / "enc.mindrecord")
    set_enc_key(KEY)
    write(path)
    for f in (path, path + ".db"):
        data = open(f, "rb").read()
        assert encryption.is_encrypted(f) and data.endswith(b"AES-GCM" + b"ENCRYPT")
        assert b"secret-" not in data and oct(os.stat(f).st_mode & 0o777) == "0o600"
    reader = FileReader(path)
    folder = reader._plain.folder
    assert [r["b"] for r in reader.get_next()] == [f"secret-{i}".encode() for i in range(12)]
    assert count_rows(path) == 12
    assert recordio.MindDataset(path, shuffle=False).get_dataset_size() == 12
    reader.close()
    assert not os.path.exists(folder)                       # the plain copies are gone with the reader


# MindSpore 2.10's message for an encrypted file read without a key (FileReader and MindDataset alike).
MINDSPORE_ENCRYPTED = ("The mindrecord file is encrypted. You need to configure 'mindspore.mindrecord.config.set_enc_key"
                       "(...)' and 'mindspore.mindrecord.config.set_enc_mode(...)' for decryption.")


def test_wrong_key_missing_key_and_plain_files_are_told_apart(tmp_path):
    path = str(tmp_path / "enc.mindrecord")
    set_enc_key(KEY)
    write(path)
    set_enc_key("0123456789abcdef")
    with pytest.raises(FormatError, match="please check if enc_key"):
        FileReader(path)
    set_enc_key(None)
    with pytest.raises(FormatError, match="is encrypted. You need to configure") as caught:
        FileReader(path)
    assert str(caught.value).startswith(MINDSPORE_ENCRYPTED)          # MindSpore's sentence first, then ours
    assert path in str(caught.value)
    with pytest.raises(FormatError, match="is encrypted"):
        count_rows(path)
    plain = str(tmp_path / "plain.mindrecord")
    write(plain)
    set_enc_key(KEY)
    with pytest.raises(FormatError, match="is not encrypted"):
        FileReader(plain)


def test_describe_and_info_name_the_encrypted_files(tmp_path):
    path = str(tmp_path / "enc.mindrecord")
    set_enc_key(KEY)
    write(path)
    info = recordio.describe(path)
    assert info["rows"] == 12 and info["shards"][0]["file"] == path and info["shards"][0]["encrypted"]
    set_enc_key(None)
    with pytest.raises(FormatError, match="is encrypted"):
        recordio.describe(path)


def test_what_mindspore_refuses_and_appends(tmp_path):
    set_enc_key(KEY)
    with pytest.raises(RuntimeError, match="automatic sharding function is unavailable"):
        FileWriter(str(tmp_path / "x"), 2)
    write(str(tmp_path / "x"))
    with pytest.raises(NotImplementedError, match="appending to an encrypted dataset"):
        FileWriter.open_for_append(str(tmp_path / "x"))


def test_appending_with_a_key_gives_mindsporess_errors_first(tmp_path):
    """A plain file with a key set, and a wrong key: MindSpore's RuntimeError and sentence (2.10)."""
    write(str(tmp_path / "plain"))
    set_enc_key(KEY)
    write(str(tmp_path / "enc"))
    with pytest.raises(RuntimeError) as caught:
        FileWriter.open_for_append(str(tmp_path / "plain"))
    assert str(caught.value).startswith("The mindrecord file is not encrypted. You can set "
                                        "'mindspore.mindrecord.config.set_enc_key(None)' to disable the decryption.")
    set_enc_key(KEY[::-1])
    for call in (FileWriter.open_for_append, FileReader):
        with pytest.raises(RuntimeError) as caught:
            call(str(tmp_path / "enc"))
        assert str(caught.value).startswith("Failed to decrypt data, please check if enc_key and enc_mode / "
                                            "dec_mode is valid.") and str(tmp_path / "enc") in str(caught.value)


def test_a_plain_file_ending_in_ENCRYPT_still_reads(tmp_path):
    path = str(tmp_path / "p.mindrecord")
    with pytest.warns(UserWarning, match="ENCRYPT"), FileWriter(path) as writer:
        writer.add_schema({"s": {"type": "string"}}, "x")
        writer.write_raw_data([{"s": "ends in ENCRYPT"}])
    assert not encryption.is_encrypted(path)
    assert FileReader(path)[0]["s"] == "ends in ENCRYPT"


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["length", "past end", "ciphertext", "tag"])
def test_damaged_encrypted_files_raise_format_errors(tmp_path, damage):
    path = str(tmp_path / "enc.mindrecord")
    set_enc_key(KEY)
    write(path)
    data = bytearray(open(path, "rb").read())
    if damage == "length":
        data[0:4] = struct.pack(">i", -5)
    elif damage == "past end":
        data[0:4] = struct.pack(">i", len(data))
    elif damage == "ciphertext":
        data[200] ^= 1
    else:
        data[10] ^= 1
    open(path, "wb").write(bytes(data))
    with pytest.raises(FormatError):
        FileReader(path)
    assert not [p for p in os.listdir(tmp_path) if "decrypt" in p]


@pytest.mark.slow
def test_callable_modes(tmp_path):
    def enc(f_in, size, f_out, key):
        f_out.write(bytes(b ^ 0x5A for b in f_in.read(size)))

    def dec(f_in, size, f_out, key):
        f_out.write(bytes(b ^ 0x5A for b in f_in.read(size - 18)))    # the trailer is recordio's, as MindSpore's
    set_enc_key(KEY)
    set_enc_mode(enc)
    with pytest.raises(RuntimeError, match="custom decryption"):
        write(str(tmp_path / "u")) or FileReader(str(tmp_path / "u"))
    set_dec_mode(dec)
    assert [int(r["a"]) for r in FileReader(str(tmp_path / "u"))] == list(range(12))
    assert open(str(tmp_path / "u"), "rb").read().endswith(b"UDF-ENCENCRYPT")


_MS = textwrap.dedent("""
    import sys
    import numpy as np
    from mindspore.mindrecord import FileReader, FileWriter, set_enc_key
    set_enc_key(sys.argv[3])
    if sys.argv[1] == "read":
        r = FileReader(sys.argv[2], 1)
        print(sorted(int(x["a"]) for x in r.get_next()))
        r.close()
    else:
        w = FileWriter(sys.argv[2], 1)
        w.add_schema({"a": {"type": "int32"}, "b": {"type": "bytes"}}, "x")
        w.write_raw_data([{"a": i, "b": bytes([i])} for i in range(7)])
        w.commit()
""")


@pytest.mark.mindspore
def test_both_ways_with_mindspore(mindspore_python, tmp_path):
    ours = str(tmp_path / "ours.mindrecord")
    set_enc_key(KEY)
    write(ours)
    done = subprocess.run([mindspore_python, "-c", _MS, "read", ours, KEY], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.stdout.strip().splitlines()[-1] == str(list(range(12))), done.stderr[-2000:]
    theirs = str(tmp_path / "theirs.mindrecord")
    done = subprocess.run([mindspore_python, "-c", _MS, "write", theirs, KEY], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert encryption.is_encrypted(theirs)
    assert [r["b"] for r in FileReader(theirs)] == [bytes([i]) for i in range(7)]


def test_count_where_counts_an_encrypted_dataset_from_its_plain_index(tmp_path):
    """``count_where`` (``recordio count --where``) reads the decrypted ``.db``, not the encrypted file."""
    from recordio.mindrecord.read.description import count_where

    path = str(tmp_path / "enc.mindrecord")
    set_enc_key(KEY)
    write(path, n=12)
    assert count_where(path, [("a", "5")]) == 1
    assert count_where(path, [("a", "99")]) == 0
    assert not any(p.name.startswith("tmp") for p in tmp_path.iterdir())      # no plain copy left beside it
