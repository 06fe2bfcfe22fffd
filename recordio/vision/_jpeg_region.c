/* The region decoder: decodes only a box of a baseline JPEG (and the margin a resampling of it reads) with
 * libjpeg-turbo (jpeg_crop_scanline, jpeg_skip_scanlines), at scale/8 of the size (DCT scaling). Shared by
 * _jpeg.c (decode_box, into a bytearray) and _chain.c (the crop chain, into scratch memory); see
 * _jpeg_region.h for the contract.
 *
 * The decoded block covers the box plus a margin of 8 pixels on every side that the image has (then
 * widened to whole iMCU columns by jpeg_crop_scanline): a resampling reads up to 2 pixels beyond the box,
 * and the fancy chroma upsampling of each of those needs one chroma sample (2 pixels at 2:1, 4 at 4:1)
 * beyond it, so every pixel a caller reads sees the same neighbours as in a full decode (a margin of 2
 * fails the tests, 4 passes them; 8 leaves room). Rows below the block are never decoded.
 * tests/test_vision_decode_region.py checks that the box equals the same box of a full decode.
 */
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>

#include "_jpeg_region.h"

#define MARGIN 8
#define ROWS_PER_CALL 16

struct error_manager {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void on_error(j_common_ptr cinfo)
{
    longjmp(((struct error_manager *)cinfo->err)->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level)
{
    if (level < 0) /* a warning (corrupt data): counted, so the region path declines and the whole-image
                    * decode decides what such a file gives */
        cinfo->err->num_warnings++;
}

static int supported(struct jpeg_decompress_struct *cinfo)
{
    if (cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8)
        return 0;
    if (cinfo->jpeg_color_space == JCS_YCbCr && cinfo->num_components == 3)
        return 1;
    return cinfo->jpeg_color_space == JCS_GRAYSCALE && cinfo->num_components == 1;
}

/* Whether the scan data holds an end-of-image marker. A file cut short has none: a full decode then
 * fails (OpenCV refuses it), and a region decode that stops early would not notice, so such files
 * go to the full decode. Inside entropy-coded data 0xFF is only followed by 0x00 or a restart marker,
 * so 0xFF 0xD9 there is the EOI (trailing bytes after it are allowed, as OpenCV allows them). */
static int ends_with_eoi(const unsigned char *scan, size_t size)
{
    for (size_t i = size; i >= 2; i--)
        if (scan[i - 2] == 0xFF && scan[i - 1] == 0xD9)
            return 1;
    return 0;
}

int region_decode(const unsigned char *data, unsigned long size, long top, long left, long height, long width,
                  int scale, region_allocator allocate, void *ctx, struct region *out)
{
    struct jpeg_decompress_struct cinfo;
    struct error_manager err;
    unsigned char *pixels;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, size);
    if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK || !supported(&cinfo)
        || !ends_with_eoi(cinfo.src->next_input_byte, cinfo.src->bytes_in_buffer)) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    cinfo.scale_num = (unsigned int)scale;
    cinfo.scale_denom = 8;
    cinfo.out_color_space = JCS_RGB;
    jpeg_calc_output_dimensions(&cinfo);
    long H = cinfo.output_height, W = cinfo.output_width;
    if (top < 0 || left < 0 || height <= 0 || width <= 0 || top + height > H || left + width > W) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    jpeg_start_decompress(&cinfo);
    long first = top > MARGIN ? top - MARGIN : 0;
    long last = top + height + MARGIN < H ? top + height + MARGIN : H;
    long from = left > MARGIN ? left - MARGIN : 0;
    long to = left + width + MARGIN < W ? left + width + MARGIN : W;
    JDIMENSION xoff = (JDIMENSION)from, cw = (JDIMENSION)(to - from);
    if (from > 0 || to < W)
        jpeg_crop_scanline(&cinfo, &xoff, &cw); /* widens to iMCU boundaries */
    pixels = allocate(ctx, (size_t)(last - first) * cw * 3);
    if (pixels == NULL) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    if (first > 0 && jpeg_skip_scanlines(&cinfo, (JDIMENSION)first) != (JDIMENSION)first) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    while ((long)cinfo.output_scanline < last) { /* up to a row group per call (libjpeg returns fewer) */
        JSAMPROW rows_at[ROWS_PER_CALL];
        long want = last - (long)cinfo.output_scanline;
        want = want < ROWS_PER_CALL ? want : ROWS_PER_CALL;
        for (long k = 0; k < want; k++)
            rows_at[k] = pixels + (size_t)(cinfo.output_scanline - first + k) * cw * 3;
        if (jpeg_read_scanlines(&cinfo, rows_at, (JDIMENSION)want) == 0) {
            jpeg_destroy_decompress(&cinfo);
            return 0;
        }
    }
    out->warned = err.pub.num_warnings > 0;
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    out->rows = last - first;
    out->cols = (long)cw;
    out->y0 = first;
    out->x0 = (long)xoff;
    return 1;
}

