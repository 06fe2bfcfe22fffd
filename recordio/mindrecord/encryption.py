"""MindSpore's encryption settings (``set_enc_key``, ``set_enc_mode``, ``set_dec_mode``).

The settings are checked as MindSpore 2.10 checks them. recordio does not yet write or read
MindSpore's encrypted MindRecord files (whole files in AES-GCM blocks): with a key set, opening a
writer or a reader raises :class:`NotImplementedError` instead of writing plain files a script
believes encrypted, or misreading encrypted ones. ``set_enc_key(None)`` (the default) is plain
MindRecord, as in MindSpore.
"""

from __future__ import annotations

__all__ = ["require_no_encryption", "set_dec_mode", "set_enc_key", "set_enc_mode"]

_settings = {"key": None, "enc_mode": "AES-GCM", "dec_mode": None}


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
    """The encryption mode: ``"AES-GCM"`` or a callable."""
    _settings["enc_mode"] = _check_mode(enc_mode, "enc_mode")


def set_dec_mode(dec_mode="AES-GCM") -> None:
    """The decryption mode: ``"AES-GCM"``, a callable, or ``None`` (the encryption mode)."""
    _settings["dec_mode"] = None if dec_mode is None else _check_mode(dec_mode, "dec_mode")


def require_no_encryption(what: str) -> None:
    """Refuse ``what`` while an encryption key is set (encrypted files are not supported yet)."""
    if _settings["key"] is not None:
        raise NotImplementedError(f"{what}: an encryption key is set (set_enc_key), and recordio does not yet "
                                  f"write or read MindSpore's encrypted MindRecord files; call "
                                  f"set_enc_key(None) for plain files")
