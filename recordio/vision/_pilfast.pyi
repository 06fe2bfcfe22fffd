"""Types of the optional C extension ``_pilfast.c`` (built by setup.py when libjpeg-turbo is there)."""

def resize_crop(jpeg: bytes | memoryview, width: int, height: int, out_w: int, out_h: int, cubic: int, top: int,
                left: int, crop_h: int, crop_w: int, vector: int = 1) -> bytearray | None: ...
