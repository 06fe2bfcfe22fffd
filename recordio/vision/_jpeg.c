/* Decode only a region of a baseline JPEG with libjpeg-turbo (jpeg_crop_scanline, jpeg_skip_scanlines),
 * for a crop that throws the rest away (RandomResizedCrop after Decode).
 *
 * decode_box(data, top, left, height, width, scale=8) -> (pixels, rows, cols, y0, x0) or None
 *
 * scale M in 1..8 decodes at M/8 of the size with libjpeg's DCT scaling (the image is then
 * ceil(H * M / 8) x ceil(W * M / 8) pixels, and the box is in those coordinates): the IDCT, the
 * upsampling and the colour conversion run on the scaled blocks only.
 *
 * The decoded block covers the box plus a margin (_jpeg_region.c says which and why). pixels is RGB,
 * rows x cols x 3, whose (0, 0) is pixel (y0, x0) of the image. None when the image is not one this path
 * handles exactly (progressive, arithmetic-coded, not YCbCr or grey, 12-bit), or on any decoding error:
 * the caller then decodes the whole image as before. tests/test_vision_decode_region.py
 * checks that the box equals the same box of a full decode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_jpeg_region.h"

/* The block the pixels are decoded into: a bytearray, made with the GIL taken back for that moment (the
 * decoding runs without it), so the caller returns it as it is, without a copy. */
struct output {
    PyThreadState *released;
    PyObject *bytes;
};

static unsigned char *allocate(void *ctx, size_t size)
{
    struct output *out = ctx;
    PyEval_RestoreThread(out->released);
    out->bytes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)size);
    out->released = PyEval_SaveThread();
    return out->bytes == NULL ? NULL : (unsigned char *)PyByteArray_AS_STRING(out->bytes);
}

static PyObject *decode_box(PyObject *self, PyObject *args)
{
    Py_buffer data;
    long top, left, height, width;
    int ok, scale = 8;
    struct output out = {NULL, NULL};
    struct region block = {0, 0, 0, 0, 0};
    if (!PyArg_ParseTuple(args, "y*llll|i", &data, &top, &left, &height, &width, &scale))
        return NULL;
    if (scale < 1 || scale > 8) {
        PyBuffer_Release(&data);
        PyErr_Format(PyExc_ValueError, "scale must be within 1..8 (eighths), got %d", scale);
        return NULL;
    }
    out.released = PyEval_SaveThread();
    ok = region_decode((const unsigned char *)data.buf, (unsigned long)data.len, top, left, height, width, scale,
                       allocate, &out, &block);
    PyEval_RestoreThread(out.released);
    PyBuffer_Release(&data);
    if (!ok || block.warned) {
        Py_XDECREF(out.bytes);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("Nllll", out.bytes, block.rows, block.cols, block.y0, block.x0);
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
