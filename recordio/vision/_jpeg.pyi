"""Types of the optional C extension ``_jpeg.c`` (built by setup.py when libjpeg-turbo is there)."""

def decode_box(jpeg: bytes | memoryview, top: int, left: int, height: int,
               width: int, scale: int = 8) -> tuple[bytearray, int, int, int, int] | None: ...
