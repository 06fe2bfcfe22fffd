"""MindSpore's encrypted MindRecord files: ``set_enc_key``, ``set_enc_mode``, ``set_dec_mode``.

With a key set, MindSpore 2.10 encrypts every data file and ``.db`` after writing them, and decrypts
them into temporary files to read them. recordio does the same, byte-compatible both ways:

::

    encrypted file = chunk* | 0 (int32 BE) | mode (7 bytes: "AES-GCM", or "UDF-ENC" for a callable) | "ENCRYPT"
    chunk          = length L (int32 BE) | L bytes: the encryption of up to 64 MiB of the plain file
    AES-GCM block  = magic D8 5E 3A 7F | tag (16) | n (int32 LE) = 24 + c | 16 (int32 LE) | iv (16)
                     | c (int32 LE) | ciphertext (c bytes)

The key is the key string's bytes (16, 24 or 32: AES-128/192/256); MindSpore's GCM uses the first
12 bytes of the stored 16-byte IV as the nonce. A callable ``enc_mode(f_in, size, f_out, key)`` /
``dec_mode(...)`` works as in MindSpore (it owns the chunk layout). Differences: recordio encrypts
the staged files before its atomic publication (a crash leaves the old dataset or the new encrypted
one, never a mixture), decrypts all the shards a header names (MindSpore decrypts only the files it
is given), keeps the plain copies as MindSpore does in ``.decrypt_mindrecord`` (mode 0700) beside the
dataset, but in a folder of its own per reader (mode 0700; MindSpore shares one per file) removed with
``.decrypt_mindrecord`` when empty as the reader is closed or the process exits (a dataset folder that
cannot be written: a private temporary folder), and refuses appends to an encrypted dataset.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from typing import NoReturn

from recordio.errors import FormatError

__all__ = ["Plaintext", "dataset_files", "decrypt_file", "encrypt_file", "is_encrypted", "set_dec_mode", "set_enc_key",
           "set_enc_mode"]

END_FLAG = b"ENCRYPT"
CHUNK = 64 << 20
GCM_MAGIC = struct.pack("<I", 0x7F3A5ED8)
_TRAILER = 4 + 7 + len(END_FLAG)
_settings: dict = {"key": None, "enc_mode": "AES-GCM", "dec_mode": None}


# --- settings (MindSpore's checks and messages) ------------------------------------------------------

def set_enc_key(enc_key: str | None) -> None:
    """The key for encrypting and decrypting MindRecord files (16, 24 or 32 characters), or ``None``."""
    if enc_key is not None:
        if not isinstance(enc_key, str):
            raise ValueError("The input enc_key is not str.")
        if len(enc_key) not in (16, 24, 32):
            raise ValueError("The length of input enc_key is not 16, 24, 32.")
    _settings["key"] = enc_key


def _check_mode(mode, name):
    if not callable(mode):
        if not isinstance(mode, str):
            raise ValueError(f"The input {name} is not str.")
        if mode != "AES-GCM":
            raise ValueError(f"The input {name} is invalid.")
    return mode


def set_enc_mode(enc_mode="AES-GCM") -> None:
    """The encryption mode: ``"AES-GCM"`` or a callable ``enc_mode(f_in, size, f_out, key)``."""
    _settings["enc_mode"] = _check_mode(enc_mode, "enc_mode")


def set_dec_mode(dec_mode="AES-GCM") -> None:
    """The decryption mode: ``"AES-GCM"``, a callable, or ``None`` (the encryption mode)."""
    _settings["dec_mode"] = None if dec_mode is None else _check_mode(dec_mode, "dec_mode")


def key() -> str | None:
    return _settings["key"]


def _dec_mode():
    mode = _settings["dec_mode"]
    if mode is None:
        if callable(_settings["enc_mode"]):
            raise RuntimeError("You use custom encryption, so you must also define custom decryption.")
        return _settings["enc_mode"]
    return mode


# --- the bytes ----------------------------------------------------------------------------------------

def _aes(key_text):
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key_text.encode("utf-8"))


def _encrypt_block(aes, plain):
    iv = os.urandom(16)
    sealed = aes.encrypt(iv[:12], plain, None)
    cipher, tag = sealed[:-16], sealed[-16:]
    body = struct.pack("<i", 16) + iv + struct.pack("<i", len(cipher)) + cipher
    return GCM_MAGIC + tag + struct.pack("<i", len(body)) + body


def _decrypt_block(aes, data, where):
    if len(data) < 48 or data[:4] != GCM_MAGIC:
        raise FormatError(f"{where}: not an AES-GCM block of an encrypted MindRecord file")
    tag = data[4:20]
    n, iv_len = struct.unpack_from("<ii", data, 20)
    if iv_len != 16 or n != len(data) - 24:
        raise FormatError(f"{where}: block lengths {n}/{iv_len} do not fit its {len(data)} bytes")
    iv = data[28:44]
    (c,) = struct.unpack_from("<i", data, 44)
    if c != len(data) - 48:
        raise FormatError(f"{where}: ciphertext length {c} does not fit its block of {len(data)} bytes")
    from cryptography.exceptions import InvalidTag

    try:
        return aes.decrypt(iv[:12], data[48:] + tag, None)
    except InvalidTag:
        raise FormatError(f"Failed to decrypt data, please check if enc_key and enc_mode / dec_mode is valid. "
                          f"({where}: the authentication tag does not match: a wrong key, or a damaged file)") from None


def encrypt_file(path: str, key_text: str | None = None, mode=None, tmp: str | None = None) -> None:
    """Encrypt ``path`` in place (through ``tmp``, default ``path + ".encrypt"``), as MindSpore's ``encrypt``."""
    key_text = key_text or _settings["key"]
    mode = mode or _settings["enc_mode"]
    size = os.path.getsize(path)
    tmp = tmp or path + ".encrypt"
    with open(path, "rb") as src, open(tmp, "wb") as out:
        if callable(mode):
            mode(src, size, out, key_text)
        else:
            aes = _aes(key_text)
            while chunk := src.read(CHUNK):
                sealed = _encrypt_block(aes, chunk)
                out.write(struct.pack(">i", len(sealed)) + sealed)
        out.write(struct.pack(">i", 0) + (b"UDF-ENC" if callable(mode) else mode.encode()) + END_FLAG)
    os.chmod(tmp, 0o600)                      # as MindSpore leaves its encrypted files
    os.replace(tmp, path)


def is_encrypted(path: str) -> bool:
    """Whether ``path`` ends with MindSpore's encryption trailer and does not start as a plain file
    (a plain file may end with the bytes ``ENCRYPT``; its first 8 bytes are a small header length)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False                         # a FIFO or device is refused elsewhere, never waited on
        with open(path, "rb") as f:
            head = f.read(8)
            size = os.fstat(f.fileno()).st_size
            if size < _TRAILER + 8:
                return False
            f.seek(size - len(END_FLAG))
            tail = f.read()
    except OSError:
        return False
    return tail == END_FLAG and (head[4:8] == GCM_MAGIC or struct.unpack("<Q", head)[0] >> 32 != 0)


def check_key(path: str) -> None:
    """Raise MindSpore's errors where the key set cannot open ``path``: a plain file (``not encrypted``),
    or a key or mode that does not decrypt its first block (``Failed to decrypt data``)."""
    if not is_encrypted(path):
        raise FormatError(f"{_NOT_ENCRYPTED} ({path})")
    mode = _dec_mode()
    if not callable(mode):
        with open(path, "rb") as f:
            (length,) = struct.unpack(">i", f.read(4))
            _decrypt_block(_aes(_settings["key"]), f.read(max(0, length)), f"{path}: block at offset 0")


def decrypt_file(path: str, out_path: str, key_text: str, mode) -> None:
    """Write the plain bytes of the encrypted file ``path`` to ``out_path``, checking every length."""
    size = os.path.getsize(path)
    with open(path, "rb") as src, open(out_path, "wb") as out:
        if callable(mode):
            mode(src, size, out, key_text)
            return
        aes, offset = _aes(key_text), 0
        while True:
            raw = src.read(4)
            if len(raw) != 4:
                raise FormatError(f"{path}: encrypted file cut off at offset {offset}")
            (length,) = struct.unpack(">i", raw)
            if length == 0:
                break
            if length < 0 or offset + 4 + length > size - _TRAILER:
                raise FormatError(f"{path}: Invalid encrypted block length {length} at offset {offset}")
            out.write(_decrypt_block(aes, src.read(length), f"{path}: block at offset {offset}"))
            offset += 4 + length


DECRYPT_DIRECTORY = ".decrypt_mindrecord"     # MindSpore's folder beside the dataset


def _own_folder(path) -> bool:
    """Whether ``path`` is a real folder (no link) owned by this user."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def _private_folder(beside):
    """A new folder of mode 0700 inside ``.decrypt_mindrecord`` (created 0700) in the folder ``beside``,
    as MindSpore keeps its plain copies; ``(folder, root)``. A folder that cannot be written there, or a
    ``.decrypt_mindrecord`` that is a link or another user's, gives a private temporary folder instead."""
    import tempfile                            # here: a reader without a key never needs it

    root = os.path.join(beside, DECRYPT_DIRECTORY)
    for _ in range(3):                         # another reader may remove an empty root meanwhile
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(root, 0o700)
            if not _own_folder(root):
                break
            return tempfile.mkdtemp(prefix="recordio-", dir=root), root
        except FileNotFoundError:
            continue
        except OSError:
            break
    return tempfile.mkdtemp(prefix="recordio-decrypted-"), None


class Plaintext:
    """Plain copies of an encrypted dataset's files in a private folder (mode 0700) inside MindSpore's
    ``.decrypt_mindrecord`` beside the dataset, removed with that folder when empty by :meth:`close`
    (and at exit). ``path(p)`` is the plain copy of the data file ``p``."""

    def __init__(self, beside: str | None = None):
        import atexit
        import tempfile

        self.folder: str
        self._root: str | None
        self.folder, self._root = _private_folder(beside) if beside else (
            tempfile.mkdtemp(prefix="recordio-decrypted-"), None)
        self._owner = os.getpid()
        atexit.register(self.close)

    def add(self, path: str) -> str:
        """Decrypt the data file ``path`` and its ``.db`` into the folder; the plain data file's path."""
        plain = os.path.join(self.folder, os.path.basename(path))
        for src, dst in ((path, plain), (path + ".db", plain + ".db")):
            if not is_encrypted(src):
                raise FormatError(f"{src}: {_NOT_ENCRYPTED}")
            decrypt_file(src, dst, _settings["key"], _dec_mode())
        return plain

    def close(self) -> None:
        if os.getpid() == self._owner and os.path.isdir(self.folder):
            import shutil
            shutil.rmtree(self.folder, ignore_errors=True)
            if self._root is not None:
                with contextlib.suppress(OSError):      # still in use by another reader: kept
                    os.rmdir(self._root)


def plaintext_of(file_name):
    """``(what to open, Plaintext or None)``: with a key set, the dataset's files decrypted (one
    data file: its header's siblings too; a list: exactly those); without, ``file_name`` itself."""
    if _settings["key"] is None:
        return file_name, None
    from recordio.mindrecord import format as fmt

    one = isinstance(file_name, (str, os.PathLike))
    paths = [file_name] if one else list(file_name)
    plain = Plaintext(os.path.dirname(os.path.realpath(os.fspath(paths[0])))) if paths else Plaintext()
    try:
        if one:
            first = os.path.abspath(os.fspath(file_name))
            opened = plain.add(first)
            folder = os.path.dirname(first)
            for name in fmt.FileHeader.read(opened).header["shard_addresses"]:
                name = fmt.check_file_name(os.path.basename(name), opened)
                if not os.path.exists(os.path.join(plain.folder, name)):
                    plain.add(os.path.join(folder, name))
            return opened, plain
        return [plain.add(os.path.abspath(os.fspath(p))) for p in file_name], plain
    except BaseException:
        plain.close()
        raise


@contextlib.contextmanager
def dataset_files(path):
    """``(what to read, encrypted)`` for the body: ``path`` itself, or with a key set its plain copies,
    removed on exit; a FormatError without a key is re-raised in MindSpore's words when a file is encrypted."""
    plain = None
    try:
        target, plain = plaintext_of(path)
        yield target, plain is not None
    except FormatError as exc:
        if _settings["key"] is not None:
            raise
        explain(path, exc)
    finally:
        if plain is not None:
            plain.close()


_NOT_ENCRYPTED = ("The mindrecord file is not encrypted. You can set 'mindspore.mindrecord.config.set_enc_key(None)' "
                  "to disable the decryption.")
_ENCRYPTED = ("The mindrecord file is encrypted. You need to configure 'mindspore.mindrecord.config.set_enc_key(...)' "
              "and 'mindspore.mindrecord.config.set_enc_mode(...)' for decryption.")


def said(path, exc) -> str:
    """The message for ``exc`` (a failure to read ``path``): MindSpore's sentence when it is encrypted."""
    if _settings["key"] is None and isinstance(path, (str, os.PathLike)) and is_encrypted(os.fspath(path)):
        return f"{_ENCRYPTED} ({os.fspath(path)})"
    return str(exc)


def explain(paths, exc) -> NoReturn:
    """Re-raise ``exc`` (a failure to open ``paths``) as MindSpore's message when a file is encrypted."""
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        if is_encrypted(os.fspath(path)):
            raise FormatError(f"{_ENCRYPTED} ({os.fspath(path)}; in recordio: recordio.mindrecord.set_enc_key / "
                              f"set_enc_mode)") from exc
    raise exc
