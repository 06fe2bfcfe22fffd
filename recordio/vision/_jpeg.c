/* Decode only a region of a baseline JPEG with libjpeg-turbo (jpeg_crop_scanline, jpeg_skip_scanlines),
 * for a crop that throws the rest away (RandomResizedCrop after Decode).
 *
 * decode_box(data, top, left, height, width, scale=8) -> (pixels, rows, cols, y0, x0) or None
 *
 * scale M in 1..8 decodes at M/8 of the size with libjpeg's DCT scaling (the image is then
 * ceil(H * M / 8) x ceil(W * M / 8) pixels, and the box is in those coordinates): the IDCT, the
 * upsampling and the colour conversion run on the scaled blocks only.
 *
 * The decoded block covers the box plus a margin of 8 pixels on every side that the image has (then
 * widened to whole iMCU columns by jpeg_crop_scanline): a resampling reads up to 2 pixels beyond the box,
 * and the fancy chroma upsampling of each of those needs one chroma sample (2 pixels at 2:1, 4 at 4:1)
 * beyond it, so every pixel a caller reads sees the same neighbours as in a full decode (a margin of 2
 * fails the tests, 4 passes them; 8 leaves room). Rows below the block are never decoded. pixels is
 * RGB, rows x cols x 3, whose (0, 0) is pixel (y0, x0) of the image. None when the image is not one
 * this path handles exactly (progressive, arithmetic-coded, not YCbCr or grey, 12-bit), or on any
 * decoding error: the caller then decodes the whole image as before. tests/test_vision_decode_region.py
 * checks that the box equals the same box of a full decode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>

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

/* The block the pixels are decoded into: a bytearray, made with the GIL taken back for that moment (the
 * decoding runs without it), so the caller returns it as it is, without a copy. */
struct output {
    PyThreadState *released;
    PyObject *bytes;
};

static unsigned char *allocate(struct output *out, size_t size)
{
    PyEval_RestoreThread(out->released);
    out->bytes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)size);
    out->released = PyEval_SaveThread();
    return out->bytes == NULL ? NULL : (unsigned char *)PyByteArray_AS_STRING(out->bytes);
}

/* Decodes into out (rows x cols x 3); returns 1 on success, 0 when the path does not apply (or the
 * block could not be allocated: out->bytes is then NULL with the error set). */
static int decode(const unsigned char *data, unsigned long size, long top, long left, long height, long width,
                  int scale, struct output *out, long *rows, long *cols, long *y0, long *x0, int *warned)
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
    pixels = allocate(out, (size_t)(last - first) * cw * 3);
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
    *warned = err.pub.num_warnings > 0;
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    *rows = last - first;
    *cols = (long)cw;
    *y0 = first;
    *x0 = (long)xoff;
    return 1;
}

static PyObject *decode_box(PyObject *self, PyObject *args)
{
    Py_buffer data;
    long top, left, height, width, rows = 0, cols = 0, y0 = 0, x0 = 0;
    int ok, warned = 0, scale = 8;
    struct output out = {NULL, NULL};
    if (!PyArg_ParseTuple(args, "y*llll|i", &data, &top, &left, &height, &width, &scale))
        return NULL;
    if (scale < 1 || scale > 8) {
        PyBuffer_Release(&data);
        PyErr_Format(PyExc_ValueError, "scale must be within 1..8 (eighths), got %d", scale);
        return NULL;
    }
    out.released = PyEval_SaveThread();
    ok = decode((const unsigned char *)data.buf, (unsigned long)data.len, top, left, height, width, scale, &out,
                &rows, &cols, &y0, &x0, &warned);
    PyEval_RestoreThread(out.released);
    PyBuffer_Release(&data);
    if (!ok || warned) {
        Py_XDECREF(out.bytes);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("Nllll", out.bytes, rows, cols, y0, x0);
}

static PyMethodDef methods[] = {
    {"decode_box", decode_box, METH_VARARGS,
     "decode_box(jpeg, top, left, height, width, scale=8) -> (rgb bytearray, rows, cols, y0, x0) or None; "
     "decoded at scale/8 of the size, the box in those coordinates"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_jpeg", NULL, -1, methods};

PyMODINIT_FUNC PyInit__jpeg(void)
{
    return PyModule_Create(&module);
}
