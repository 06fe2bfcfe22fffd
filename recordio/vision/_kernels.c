/* One-pass C versions of the uint8 colour kernels in color_kernels.py, and the table pass of the
 * fused level runs (fusion.py: Rescale/Normalize/HWC2CHW/ToTensor as one lookup per channel); the Python
 * entry points. The pixel loops are in _kernels_colour.c and _kernels_levels.c.
 *
 * adjust changes a flat, C-contiguous uint8 RGB buffer in place; adjust_from, adjust_levels and lookup
 * read a uint8 <H,W,C> image with any strides (a flipped or cropped view) and write a C-contiguous
 * output. The Python side checks dtype, layout and sizes; these functions check sizes again and never
 * read past a buffer. The loops run without the GIL.
 */
#include "_kernels.h"
#include <stdlib.h>
#include <string.h>

static PyObject *adjust(PyObject *self, PyObject *args)
{
    PyObject *obj;
    const char *kinds;
    Py_ssize_t steps;
    float f[4];
    Py_buffer img;
    if (!PyArg_ParseTuple(args, "Oy#ffff", &obj, &kinds, &steps, &f[0], &f[1], &f[2], &f[3]))
        return NULL;
    if (check_kinds(kinds, steps) < 0 || get_pixels(obj, &img) < 0)
        return NULL;
    Py_ssize_t n = img.len / 3;
    if (n) {
        struct source src = {(const uint8_t *)img.buf, 1, n, 3 * n, 3};
        Py_BEGIN_ALLOW_THREADS
        adjust_steps(src, (uint8_t *)img.buf, kinds, steps, f, NULL);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&img);
    Py_RETURN_NONE;
}

/* adjust_from(image, out, kinds, b, c, s, h): out (C-contiguous <H,W,3>) = the image (any strides) with
 * the adjustments in kinds applied, as adjust. */
static PyObject *adjust_from(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *out_obj;
    const char *kinds;
    Py_ssize_t steps;
    float f[4];
    struct image im;
    struct source src;
    Py_buffer out;
    if (!PyArg_ParseTuple(args, "OOy#ffff", &src_obj, &out_obj, &kinds, &steps, &f[0], &f[1], &f[2], &f[3]))
        return NULL;
    if (check_kinds(kinds, steps) < 0 || get_rgb(src_obj, &im, &src) < 0)
        return NULL;
    if (get_pixels(out_obj, &out) < 0) {
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (out.len != im.h * im.w * 3)
        PyErr_Format(PyExc_ValueError, "image of %zd pixels, output of %zd bytes", im.h * im.w, out.len);
    else if (im.h > 0 && im.w > 0) {
        Py_BEGIN_ALLOW_THREADS
        adjust_steps(src, (uint8_t *)out.buf, kinds, steps, f, NULL);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&im.view);
    PyBuffer_Release(&out);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* adjust_levels(image, out, kinds, b, c, s, h, tables, chw): out = the level run (tables, as lookup) of the
 * image (uint8 <H,W,3>, any strides) with the adjustments applied (as adjust_from), in one call. */
static PyObject *adjust_levels(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *out_obj, *tables_obj, *program_obj = NULL;
    float prog[12];
    struct levels lv;
    const char *kinds;
    Py_ssize_t steps;
    float f[4];
    int chw, failed = 0;
    struct image im;
    struct source src;
    Py_buffer tables, out;
    if (!PyArg_ParseTuple(args, "OOy#ffffOp|O", &src_obj, &out_obj, &kinds, &steps, &f[0], &f[1], &f[2], &f[3],
                          &tables_obj, &chw, &program_obj))
        return NULL;
    if (check_kinds(kinds, steps) < 0 || get_program(program_obj, prog, &lv) < 0 || get_rgb(src_obj, &im, &src) < 0)
        return NULL;
    if (get_table(tables_obj, &tables, 3 * 256 * (Py_ssize_t)sizeof(float), "tables") < 0) {
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (get_floats(out_obj, &out, im.h * im.w * 3) == 0) {
        lv.t = (const float *)tables.buf, lv.out = (float *)out.buf, lv.w = im.w, lv.plane = im.h * im.w, lv.chw = chw;
        Py_BEGIN_ALLOW_THREADS
        failed = adjust_into_levels(src, kinds, steps, f, &lv);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&out);
        if (failed)
            PyErr_NoMemory();
    }
    PyBuffer_Release(&im.view);
    PyBuffer_Release(&tables);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* lookup(image, tables, out, chw): out[c, y, x] (chw) or out[y, x, c] = tables[c][image[y, x, c]]. */
static PyObject *lookup(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *tables_obj, *out_obj, *program_obj = NULL;
    int chw;
    struct image im;
    float prog[12];
    struct levels lv;
    Py_buffer tables, out;
    if (!PyArg_ParseTuple(args, "OOOp|O", &src_obj, &tables_obj, &out_obj, &chw, &program_obj))
        return NULL;
    if (get_program(program_obj, prog, &lv) < 0 || get_image(src_obj, &im) < 0)
        return NULL;
    if (get_table(tables_obj, &tables, im.c * 256 * (Py_ssize_t)sizeof(float), "tables") < 0) {
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (get_floats(out_obj, &out, im.h * im.w * im.c) == 0) {
        lv.t = (const float *)tables.buf, lv.out = (float *)out.buf, lv.w = im.w, lv.plane = im.h * im.w, lv.chw = chw;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t y = 0; y < im.h; y++)
            levels_row(&lv, (const uint8_t *)im.view.buf + y * im.sy, im.sx, im.sc, im.c, y);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&out);
    }
    PyBuffer_Release(&im.view);
    PyBuffer_Release(&tables);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* resize(image, out, dh, dw, oy, ox[, full_h, full_w, y0, x0]): out = rows oy .. oy + out.shape[0] and
 * columns ox .. ox + out.shape[1] of the (dh, dw) INTER_LINEAR resize of image (uint8 <H,W,C>, channels
 * adjacent, pixels adjacent, any row stride), as cv2.resize; out: C-contiguous uint8 <oh,ow,C>. With the
 * last four, image is the part at (y0, x0) of a full_h x full_w image, and the resize is of that image
 * (ValueError if the window reads outside the part). */
static PyObject *resize(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *out_obj;
    Py_ssize_t dh, dw, oy, ox, full_h = -1, full_w = -1, y0 = 0, x0 = 0;
    struct image im;
    Py_buffer out;
    int failed = 0;
    if (!PyArg_ParseTuple(args, "OOnnnn|nnnn", &src_obj, &out_obj, &dh, &dw, &oy, &ox, &full_h, &full_w, &y0, &x0))
        return NULL;
    if (get_image(src_obj, &im) < 0)
        return NULL;
    if (full_h < 0)
        full_h = im.h, full_w = im.w;
    if (im.sc != 1 || im.sx != im.c || im.sy < im.w * im.c || im.h < 1 || im.w < 1) {
        PyErr_SetString(PyExc_ValueError, "resize: expected an image with adjacent channels and pixels");
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (im.w * im.c > INT32_MAX - 256) {    /* byte offsets into a source row are int32 */
        PyErr_Format(PyExc_ValueError, "resize: rows of %zd pixels are too long", im.w);
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (y0 < 0 || x0 < 0 || y0 + im.h > full_h || x0 + im.w > full_w) {
        PyErr_Format(PyExc_ValueError, "resize: a %zd x %zd part at (%zd, %zd) is not inside a %zd x %zd image",
                     im.h, im.w, y0, x0, full_h, full_w);
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_ND | PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (out.ndim != 3 || out.itemsize != 1 || out.shape[2] != im.c || dh < 1 || dw < 1 || oy < 0 || ox < 0
        || oy + out.shape[0] > dh || ox + out.shape[1] > dw) {
        PyErr_Format(PyExc_ValueError, "resize: out must be a uint8 <oh,ow,%zd> window of the (%zd, %zd) output",
                     im.c, dh, dw);
    } else {
        struct resize_source src = {(const uint8_t *)im.view.buf, im.h, im.w, im.sy, im.c, full_h, full_w, y0, x0};
        Py_BEGIN_ALLOW_THREADS
        failed = resize_linear(&src, (uint8_t *)out.buf, out.shape[1] * im.c, dh, dw, oy, ox, out.shape[0],
                               out.shape[1]);
        Py_END_ALLOW_THREADS
        if (failed == -1)
            PyErr_NoMemory();
        else if (failed)
            PyErr_SetString(PyExc_ValueError, "resize: the window reads pixels outside the part");
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&im.view);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* use_simd(on): whether the AVX2 loops run (on, and the CPU has AVX2); returns whether they ran before.
 * For tests that compare them with the scalar loops. */
static PyObject *use_simd(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(simd_use(on));
}

/* use_avx512(on): whether the AVX-512 loops run (on, with use_simd on, and the CPU has them); returns
 * whether they ran before. For tests. */
static PyObject *use_avx512(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(simd_use_wide(on));
}

static PyMethodDef methods[] = {
    {"adjust", adjust, METH_VARARGS,
     "adjust(rgb, kinds, b, c, s, h): the adjustments in kinds (bytes of 0..3: brightness, contrast, "
     "saturation, hue) in that order, in place; factors are rounded to float32."},
    {"adjust_from", adjust_from, METH_VARARGS,
     "adjust_from(image, out, kinds, b, c, s, h): out = the uint8 <H,W,3> image (any strides) with the "
     "adjustments applied, as adjust."},
    {"adjust_levels", adjust_levels, METH_VARARGS,
     "adjust_levels(image, out, kinds, b, c, s, h, tables, chw[, program]): out = lookup(adjust_from(image, ...), "
     "tables, chw[, program]) in one call, without the uint8 image in between."},
    {"lookup", lookup, METH_VARARGS,
     "lookup(image, tables, out, chw[, program]): out[c, y, x] (chw) or out[y, x, c] = tables[c][image[y, x, c]] "
     "(float32; the image uint8 <H,W,C>, C <= 4, any strides). program: float32 <4,3>, the operands of a multiply, "
     "an add, a subtract and a divide per channel that give the tables' values in that order, computed instead of "
     "looked up where that is faster (three channels, <C,H,W>); the caller checks that they give the same values."},
    {"resize", resize, METH_VARARGS,
     "resize(image, out, dh, dw, oy, ox): out = the window at (oy, ox) of the (dh, dw) INTER_LINEAR resize of "
     "the uint8 <H,W,C> image (channels and pixels adjacent), byte for byte as cv2.resize."},
    {"use_simd", use_simd, METH_O,
     "use_simd(on): run the AVX2 loops where the CPU has AVX2, and the AVX-512 ones where it has those (on), "
     "or only the scalar ones; returns the previous setting. The results are the same either way."},
    {"use_avx512", use_avx512, METH_O,
     "use_avx512(on): run the AVX-512 loops where the CPU has them (on, and use_simd on) or not; returns the "
     "previous setting. The results are the same either way."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void)
{
    simd_init();
    return PyModule_Create(&module);
}
