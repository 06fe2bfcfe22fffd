/* The region decoder (_jpeg_region.c), shared by _jpeg.c and _chain.c. */
#ifndef RECORDIO_JPEG_REGION_H
#define RECORDIO_JPEG_REGION_H
#include <stddef.h>

/* Where the decoded block goes: size bytes, or NULL (the decoder then declines; the caller knows why). */
typedef unsigned char *(*region_allocator)(void *ctx, size_t size);

/* The decoded block: rows x cols RGB pixels, whose (0, 0) is pixel (y0, x0) of the (scaled) image; warned:
 * libjpeg warned (corrupt data), which callers treat as a decline. */
struct region {
    long rows, cols, y0, x0;
    int warned;
};

/* Decodes the box (top, left, height, width) of the JPEG at scale/8 of its size (scale 1..8, the box in the
 * scaled image's coordinates) into a block from allocate(ctx, ...); 1 on success, 0 where this path does
 * not apply: not baseline/8-bit/YCbCr-or-grey, no end-of-image marker, the box outside the image, a
 * decoding error, or no memory. Runs without the GIL (touches no Python object). */
int region_decode(const unsigned char *data, unsigned long size, long top, long left, long height, long width,
                  int scale, region_allocator allocate, void *ctx, struct region *out);

#endif
