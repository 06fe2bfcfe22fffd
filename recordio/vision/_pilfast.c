/* MindSpore's PIL eval chain, Decode(to_pil=True) -> Resize -> CenterCrop, with Pillow's bytes and
 * without Pillow: libjpeg-turbo decodes as Pillow's JpegDecode.c asks it to (ISLOW IDCT, fancy
 * upsampling, RGB or grey out), and _pilfast_resample.c repeats Pillow 13's resampling. The two passes
 * run in Pillow 13's order: vertical first when the height shrinks and the width does not, or shrinks
 * by less than half as many pixels (measured on Pillow 13.0.0: the final form of its PR #9549 was not
 * at hand; tests/test_vision_pil_fast.py pins the line, and pil_fast checks it at first use). Only the
 * window that the crop keeps is resampled, and only the source rows and columns that window reads
 * (plus a margin for the chroma upsampling) are decoded.
 *
 * resize_crop(jpeg, width, height, out_w, out_h, cubic, top, left, crop_h, crop_w, vector=1)
 *     -> bytearray (crop_h x crop_w x 3, RGB) or None
 *
 * width x height is the JPEG's size as the caller read it, out_w x out_h the resize, and the window
 * (top, left, crop_h, crop_w) must lie inside the resized image. None when this path does not apply
 * exactly (not 8-bit grey/YCbCr/RGB, sizes differ, any libjpeg warning or error, ...): the caller
 * then runs Pillow. The scan is entropy-decoded to its end, so a damaged stream is seen as Pillow
 * sees it. All sums are int32 as in Pillow, so the AVX2 loops (vector=1 where the CPU has AVX2)
 * and the plain ones give the same bytes. tests/test_vision_pil_fast.py compares with Pillow.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

#include "_pilfast.h"

#define MARGIN 8 /* rows and columns decoded beyond the window: the chroma upsampling needs 2 (measured) */

/* ---- Decoding, as Pillow's JpegDecode.c sets libjpeg up for an "RGB" or "L" image: the defaults
 * (JDCT_ISLOW, fancy upsampling), out_color_space JCS_RGB (here its RGBX form: the same conversion, a
 * fourth byte per pixel) or JCS_GRAYSCALE. Rows [r0, r1) and columns [c0, c1) are wanted; the plane
 * holds them and a margin around them. */

struct error_manager {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void on_error(j_common_ptr cinfo) { longjmp(((struct error_manager *)cinfo->err)->jump, 1); }

static void on_message(j_common_ptr cinfo, int level)
{
    if (level < 0) /* a warning (corrupt data): counted, as libjpeg's own handler counts it */
        cinfo->err->num_warnings++;
}

/* Whether the scan data holds an end-of-image marker: a file cut short has none, and Pillow refuses it
 * (0xFF 0xD9 cannot occur inside entropy-coded data, where 0xFF is followed by 0x00 or a restart marker). */
static int ends_with_eoi(const uint8_t *scan, size_t size)
{
    for (size_t i = size; i >= 2; i--)
        if (scan[i - 2] == 0xFF && scan[i - 1] == 0xD9)
            return 1;
    return 0;
}

static int decode(const uint8_t *data, size_t size, long width, long height, long r0, long r1, long c0, long c1,
                  long slack, struct plane *out)
{
    struct jpeg_decompress_struct cinfo;
    struct error_manager err;
    uint8_t *volatile px = NULL;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(px);
        return 0;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    int ok = jpeg_read_header(&cinfo, TRUE) == JPEG_HEADER_OK;
    J_COLOR_SPACE space = cinfo.jpeg_color_space;
    ok = ok && cinfo.data_precision == 8 && (long)cinfo.image_width == width && (long)cinfo.image_height == height
         && ((cinfo.num_components == 3 && (space == JCS_YCbCr || space == JCS_RGB))
             || (cinfo.num_components == 1 && space == JCS_GRAYSCALE));
    if (!ok || !ends_with_eoi(cinfo.src->next_input_byte, cinfo.src->bytes_in_buffer)) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    out->bands = cinfo.num_components == 3 ? 4 : 1;
    cinfo.out_color_space = out->bands == 4 ? JCS_EXT_RGBX : JCS_GRAYSCALE;
    jpeg_start_decompress(&cinfo);
    long first = r0 > MARGIN ? r0 - MARGIN : 0, last = r1 + MARGIN < height ? r1 + MARGIN : height;
    long from = c0 > MARGIN ? c0 - MARGIN : 0, to = c1 + MARGIN < width ? c1 + MARGIN : width;
    JDIMENSION xoff = (JDIMENSION)from, cw = (JDIMENSION)(to - from);
    if (from > 0 || to < width)
        jpeg_crop_scanline(&cinfo, &xoff, &cw); /* widens to iMCU boundaries */
    out->stride = (long)cw * out->bands;
    slack = slack > out->stride ? slack : out->stride;
    px = malloc((size_t)(last - first) * out->stride + slack);
    if (px != NULL)
        memset(px + (size_t)(last - first) * out->stride, 0, (size_t)slack); /* read past a row's last tap, times 0 */
    if (px == NULL || (first > 0 && jpeg_skip_scanlines(&cinfo, (JDIMENSION)first) != (JDIMENSION)first))
        longjmp(err.jump, 1);
    while ((long)cinfo.output_scanline < last) {
        JSAMPROW row = px + (size_t)(cinfo.output_scanline - first) * out->stride;
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1)
            longjmp(err.jump, 1);
    }
    if (last < height) { /* the rest is entropy-decoded (skipping to the very end would not): damage warns */
        JSAMPROW row = px + (size_t)(last - first) * out->stride; /* the slack, as scratch */
        JDIMENSION skip = (JDIMENSION)(height - 1 - last);
        if ((skip > 0 && jpeg_skip_scanlines(&cinfo, skip) != skip) || jpeg_read_scanlines(&cinfo, &row, 1) != 1)
            longjmp(err.jump, 1);
        memset(row, 0, (size_t)slack);
    }
    int warned = err.pub.num_warnings > 0;
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    if (warned) {
        free(px);
        return 0;
    }
    out->px = px;
    out->rows = last - first;
    out->cols = (long)cw;
    out->y0 = first;
    out->x0 = (long)xoff;
    return 1;
}

/* ---- The chain: the source rows and columns the window reads, the decode, the passes in Pillow's order. */

struct job {
    long width, height, out_w, out_h, top, left, crop_h, crop_w;
    int cubic, vector;
};

static int new_plane(struct plane *p, long rows, long cols, long y0, long x0, int bands, long slack)
{
    *p = (struct plane){NULL, rows, cols, cols * bands, y0, x0, bands};
    p->px = malloc((size_t)rows * p->stride + slack);
    if (p->px != NULL)
        memset(p->px + (size_t)rows * p->stride, 0, (size_t)slack);
    return p->px != NULL;
}

/* The source range [*lo, *hi) that outputs first..first+count-1 read (the same range when no resize). */
static int span(int need, long in_size, long out_size, long first, long count, int cubic, struct coeffs *c,
                long *lo, long *hi)
{
    *lo = first, *hi = first + count;
    if (!need)
        return 1;
    if (!pilfast_precompute((int)in_size, (int)out_size, (int)first, (int)count, cubic, c))
        return 0;
    *lo = c->bounds[0], *hi = 0;
    for (long i = 0; i < count; i++) {
        long end = c->bounds[2 * i] + c->bounds[2 * i + 1];
        *lo = c->bounds[2 * i] < *lo ? c->bounds[2 * i] : *lo;
        *hi = end > *hi ? end : *hi;
    }
    return *hi > *lo;
}

static void pack_rgb(const struct plane *p, const struct job *j, uint8_t *dst)
{
    for (long y = 0; y < j->crop_h; y++) {
        const uint8_t *row = p->px + (j->top + y - p->y0) * p->stride + (j->left - p->x0) * p->bands;
        for (long x = 0; x < j->crop_w; x++, dst += 3) {
            const uint8_t *s = row + x * p->bands;
            dst[0] = s[0];
            dst[1] = s[p->bands == 4 ? 1 : 0];
            dst[2] = s[p->bands == 4 ? 2 : 0];
        }
    }
}

static int run(const uint8_t *data, size_t size, const struct job *j, uint8_t *dst)
{
    int need_h = j->out_w != j->width, need_v = j->out_h != j->height, ok = 0;
    int horizontal_first = !(j->out_h < j->height && (j->out_w >= j->width
                                                       || j->height - j->out_h > 2 * (j->width - j->out_w)));
    struct coeffs hc = {0, NULL, NULL}, vc = {0, NULL, NULL};
    struct plane src = {NULL, 0, 0, 0, 0, 0, 0}, mid = src, fin = src;
    long r0, r1, c0, c1, slack;
    if (!span(need_h, j->width, j->out_w, j->left, j->crop_w, j->cubic, &hc, &c0, &c1)
        || !span(need_v, j->height, j->out_h, j->top, j->crop_h, j->cubic, &vc, &r0, &r1))
        goto end;
    slack = 4 * (hc.ksize + 4); /* the AVX2 horizontal pass reads up to ksize pixels past a pair's first one */
    if (!decode(data, size, j->width, j->height, r0, r1, c0, c1, slack, &src))
        goto end;
    const struct plane *last = &src;
    if (horizontal_first && need_h) {
        long rows = need_v ? r1 - r0 : j->crop_h, y0 = need_v ? r0 : j->top;
        if (!new_plane(&mid, rows, j->crop_w, y0, j->left, src.bands, slack)
            || !pilfast_horizontal(&src, &mid, &hc, j->vector))
            goto end;
        last = &mid;
    }
    if (need_v) {
        long cols = horizontal_first ? j->crop_w : c1 - c0, x0 = horizontal_first ? j->left : c0;
        if (!new_plane(&fin, j->crop_h, cols, j->top, x0, src.bands, slack))
            goto end;
        pilfast_vertical(last, &fin, &vc, j->vector);
        last = &fin;
    }
    if (!horizontal_first && need_h) {
        if (!new_plane(&mid, j->crop_h, j->crop_w, j->top, j->left, src.bands, slack)
            || !pilfast_horizontal(&fin, &mid, &hc, j->vector))
            goto end;
        last = &mid;
    }
    pack_rgb(last, j, dst);
    ok = 1;
end:
    free(hc.bounds), free(hc.kk), free(vc.bounds), free(vc.kk);
    free(src.px), free(mid.px), free(fin.px);
    return ok;
}

static PyObject *resize_crop(PyObject *self, PyObject *args)
{
    Py_buffer data;
    struct job j;
    j.vector = 1;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*llllillll|i", &data, &j.width, &j.height, &j.out_w, &j.out_h, &j.cubic, &j.top,
                          &j.left, &j.crop_h, &j.crop_w, &j.vector))
        return NULL;
    const long most = 65535;    /* JPEG's largest side; Pillow's sizes here are ints */
    if (j.width < 1 || j.height < 1 || j.width > most || j.height > most || j.out_w < 1 || j.out_h < 1
        || j.out_w > most || j.out_h > most || j.top < 0 || j.left < 0 || j.crop_h < 1 || j.crop_w < 1
        || j.top + j.crop_h > j.out_h || j.left + j.crop_w > j.out_w) {
        PyBuffer_Release(&data);
        PyErr_Format(PyExc_ValueError, "resize_crop: sizes out of range: image %ldx%ld, resize %ldx%ld, window "
                     "(top %ld, left %ld, %ldx%ld)", j.width, j.height, j.out_w, j.out_h, j.top, j.left, j.crop_w,
                     j.crop_h);
        return NULL;
    }
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)j.crop_h * j.crop_w * 3);
    if (out == NULL) {
        PyBuffer_Release(&data);
        return NULL;
    }
    uint8_t *dst = (uint8_t *)PyByteArray_AS_STRING(out);
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = run((const uint8_t *)data.buf, (size_t)data.len, &j, dst);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (!ok) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"resize_crop", resize_crop, METH_VARARGS,
     "resize_crop(jpeg, width, height, out_w, out_h, cubic, top, left, crop_h, crop_w, vector=1) -> RGB bytearray "
     "(crop_h x crop_w x 3) or None: Pillow's decode, resize (bilinear, or bicubic) and crop of a JPEG"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pilfast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pilfast(void) { return PyModule_Create(&module); }
