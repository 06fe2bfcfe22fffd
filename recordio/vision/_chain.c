/* The crop chain in one call: RandomCropDecodeResize (or Decode -> RandomResizedCrop) -> an optional
 * random flip -> an optional RandomColorAdjust -> a level run (Rescale/Normalize/HWC2CHW), for a baseline
 * JPEG whose crop box is decoded at full scale. The draws are made in Python, op by op, as the unfused ops
 * make them (crop_chain.py); this call does the pixel work of all of them without the GIL and without
 * Python between them: the region decoder (_jpeg_region.c) decodes the box into scratch memory, the
 * compiled bilinear resize (_kernels_resize.c) resizes it to the output size, and the colour steps and the
 * level run (_kernels_colour.c) read it through the flip and write the float32 output. Each part is the
 * one the unfused ops call, so the values are theirs byte for byte.
 *
 * crop_levels(jpeg, top, left, height, width, (full_h, full_w, y0, x0), (dh, dw), (wy, wx, oh, ow), flips, out,
 *             kinds, b, c, s, h, tables, chw[, program])
 *   -> True, or False where the region decoder declines the file (the caller then runs the ops as written).
 * The box (top, left, height, width) of the JPEG is decoded; it is the part at (y0, x0) of the full_h x full_w
 * image that is resized to (dh, dw) (the train chain: the crop box itself, at (0, 0); the eval chain: the rows
 * and columns of the whole image that the centre crop's window reads), of which the window (wy, wx, oh, ow) is
 * kept. flips: bit 0 horizontal, bit 1 vertical; kinds, the factors, tables, chw and program as adjust_levels.
 * The eval chain (Decode -> Resize -> CenterCrop -> Normalize -> HWC2CHW) takes the same call, with no flips
 * and no colour steps.
 */
#include "_kernels.h"
#include <stdlib.h>

#include "_jpeg_region.h"

/* The decoded block's memory: whether it was asked for, and what it got. */
struct block {
    unsigned char *pixels;
    int asked;
};

static unsigned char *allocate(void *ctx, size_t size)
{
    struct block *b = ctx;
    b->asked = 1;
    b->pixels = malloc(size);
    return b->pixels;
}

/* The resize of the chain: the window (wy, wx) .. (wy + oh, wx + ow) of the (dh, dw) bilinear resize of a
 * full_h x full_w image, of which the decoded box is the part at (y0, x0). */
struct resize_step {
    Py_ssize_t full_h, full_w, y0, x0, dh, dw, wy, wx, oh, ow;
};

/* 1 done, 0 declined by the region decoder (or a window that reads outside the box), -1 out of memory. */
static int run(const unsigned char *data, size_t size, long top, long left, long height, long width,
               const struct resize_step *rs, int flips, const char *kinds, Py_ssize_t steps, const float *f,
               const struct levels *lv)
{
    struct block b = {NULL, 0};
    struct region r;
    uint8_t *resized = NULL;
    int result = 1;
    if (!region_decode(data, (unsigned long)size, top, left, height, width, 8, allocate, &b, &r) || r.warned) {
        free(b.pixels);
        return b.asked && b.pixels == NULL ? -1 : 0;
    }
    const uint8_t *box = b.pixels + ((size_t)(top - r.y0) * (size_t)r.cols + (size_t)(left - r.x0)) * 3;
    struct source src = {box, height, width, (Py_ssize_t)r.cols * 3, 3};
    if (!(rs->dh == height && rs->dw == width && rs->full_h == height && rs->full_w == width && rs->wy == 0
          && rs->wx == 0 && rs->oh == height && rs->ow == width)) { /* not the box itself: resize */
        struct resize_source part = {box, height, width, src.sy, 3, rs->full_h, rs->full_w, rs->y0, rs->x0};
        resized = malloc((size_t)(rs->oh * rs->ow * 3));
        int failed = resized == NULL ? -1
                                     : resize_linear(&part, resized, rs->ow * 3, rs->dh, rs->dw, rs->wy, rs->wx, rs->oh,
                                                     rs->ow);
        if (failed) {
            free(resized);
            free(b.pixels);
            return failed == -1 ? -1 : 0;
        }
        src = (struct source){resized, rs->oh, rs->ow, rs->ow * 3, 3};
    }
    if (flips & 1) /* as numpy's reversed views: the last pixel (row) first, a negative stride */
        src.base += (src.w - 1) * src.sx, src.sx = -src.sx;
    if (flips & 2)
        src.base += (src.h - 1) * src.sy, src.sy = -src.sy;
    if (adjust_into_levels(src, kinds, steps, f, lv) < 0)
        result = -1;
    free(resized);
    free(b.pixels);
    return result;
}

static PyObject *crop_levels(PyObject *self, PyObject *args)
{
    Py_buffer data, tables, out;
    PyObject *out_obj, *tables_obj, *program_obj = NULL;
    long top, left, height, width;
    struct resize_step rs;
    Py_ssize_t steps;
    const char *kinds;
    int flips, chw, done = 0;
    float f[4], prog[12];
    struct levels lv;
    if (!PyArg_ParseTuple(args, "y*llll(nnnn)(nn)(nnnn)iOy#ffffOp|O", &data, &top, &left, &height, &width, &rs.full_h,
                          &rs.full_w, &rs.y0, &rs.x0, &rs.dh, &rs.dw, &rs.wy, &rs.wx, &rs.oh, &rs.ow, &flips, &out_obj,
                          &kinds, &steps, &f[0], &f[1], &f[2], &f[3], &tables_obj, &chw, &program_obj))
        return NULL;
    if (top < 0 || left < 0 || height < 1 || width < 1 || rs.y0 < 0 || rs.x0 < 0 || rs.y0 + height > rs.full_h
        || rs.x0 + width > rs.full_w || rs.dh < 1 || rs.dw < 1 || rs.oh < 1 || rs.ow < 1 || rs.wy < 0 || rs.wx < 0
        || rs.wy + rs.oh > rs.dh || rs.wx + rs.ow > rs.dw || flips < 0 || flips > 3) {
        PyErr_Format(PyExc_ValueError, "crop_levels: a box (%ld, %ld, %ld, %ld) at (%zd, %zd) of a %zd x %zd image, "
                     "its %zd x %zd resize's window (%zd, %zd, %zd, %zd), flips %d", top, left, height, width, rs.y0,
                     rs.x0, rs.full_h, rs.full_w, rs.dh, rs.dw, rs.wy, rs.wx, rs.oh, rs.ow, flips);
        PyBuffer_Release(&data);
        return NULL;
    }
    if (check_kinds(kinds, steps) < 0 || get_program(program_obj, prog, &lv) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (get_table(tables_obj, &tables, 3 * 256 * (Py_ssize_t)sizeof(float), "tables") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (get_floats(out_obj, &out, rs.oh * rs.ow * 3) == 0) {
        lv.t = (const float *)tables.buf, lv.out = (float *)out.buf, lv.w = rs.ow, lv.plane = rs.oh * rs.ow;
        lv.chw = chw;
        Py_BEGIN_ALLOW_THREADS
        done = run((const unsigned char *)data.buf, (size_t)data.len, top, left, height, width, &rs, flips, kinds,
                   steps, f, &lv);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&out);
        if (done < 0)
            PyErr_NoMemory();
    }
    PyBuffer_Release(&tables);
    PyBuffer_Release(&data);
    if (PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(done);
}

static PyMethodDef methods[] = {
    {"crop_levels", crop_levels, METH_VARARGS,
     "crop_levels(jpeg, top, left, height, width, (full_h, full_w, y0, x0), (dh, dw), (wy, wx, oh, ow), flips, out, "
     "kinds, b, c, s, h, tables, chw[, program]) -> bool: out = the level run (as _kernels.adjust_levels) of the "
     "adjusted, flipped (bit 0 horizontal, bit 1 vertical) window (wy, wx, oh, ow) of the (dh, dw) INTER_LINEAR "
     "resize of a full_h x full_w image whose part at (y0, x0) is the box (top, left, height, width) of the "
     "baseline JPEG, decoded at full scale; False (out untouched) where the region decoder declines the file."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_chain", NULL, -1, methods};

PyMODINIT_FUNC PyInit__chain(void)
{
    simd_init();
    return PyModule_Create(&module);
}
