/* One-pass C versions of the uint8 colour kernels in color_kernels.py, and the table pass of the
 * fused level runs (fusion.py: Rescale/Normalize/HWC2CHW/ToTensor as one lookup per channel).
 *
 * Each function repeats, pixel by pixel, the float32 operation sequence of its numpy counterpart
 * (the same tables, the same order of float32 operations, rounding half to even and saturating),
 * so both give the same bytes; tests/test_vision_kernels_c.py checks it on every RGB colour.
 * Build flags forbid contracting a * b + c into a fused multiply-add (it would round once, not twice);
 * -fno-trapping-math only lets the compiler turn selects into branch-free code (results unchanged).
 *
 * adjust changes a flat, C-contiguous uint8 RGB buffer in place; adjust_from and lookup read a uint8
 * <H,W,C> image with any strides (a flipped or cropped view) and write a C-contiguous output. The
 * Python side checks dtype, layout and sizes; these functions check sizes again and never read past
 * a buffer. The loops run without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Round half to even and saturate, as numpy's rint + clip and OpenCV's saturate_cast. Adding and
 * subtracting 1.5 * 2**23 rounds a float in (0, 255) to an integer in the default rounding mode
 * (to nearest, ties to even) without a libm call. */
static inline uint8_t round_u8(float x)
{
    const float magic = 12582912.0f;
    x = x > 0.0f ? x : 0.0f; /* NaN -> 0 */
    x = x < 255.0f ? x : 255.0f;
    return (uint8_t)(int32_t)((x + magic) - magic);
}

static int get_pixels(PyObject *obj, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return -1;
    if (view->len % 3) {
        PyErr_Format(PyExc_ValueError, "expected whole RGB pixels, got %zd bytes", view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int get_table(PyObject *obj, Py_buffer *view, Py_ssize_t size, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len != size) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", what, size, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Pixel loops are built twice, for AVX2 and for the baseline, and picked when the module loads
 * (the same float32 operations either way: AVX2 has no fused multiply-add, and contraction is off). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#define CHUNK 256

/* A uint8 <H,W,C> image with any strides (a flipped view has a negative one): the view, and its sizes. */
struct image {
    Py_buffer view;
    Py_ssize_t h, w, c, sy, sx, sc;
};

static int get_image(PyObject *obj, struct image *im)
{
    if (PyObject_GetBuffer(obj, &im->view, PyBUF_STRIDED_RO) < 0)
        return -1;
    if (im->view.ndim != 3 || im->view.itemsize != 1 || im->view.shape[2] < 1 || im->view.shape[2] > 4) {
        PyErr_Format(PyExc_ValueError, "expected a uint8 <H,W,C> image with 1 to 4 channels, got %d dimensions "
                     "of %zd-byte items", im->view.ndim, im->view.itemsize);
        PyBuffer_Release(&im->view);
        return -1;
    }
    im->h = im->view.shape[0], im->w = im->view.shape[1], im->c = im->view.shape[2];
    im->sy = im->view.strides[0], im->sx = im->view.strides[1], im->sc = im->view.strides[2];
    return 0;
}

/* Where a pass reads its pixels: the caller's image (any row stride, pixel stride sx: a flipped view
 * has a negative one) until a pass has written the output, then the output (rows of 3 * w bytes). */
struct source {
    const uint8_t *base;
    Py_ssize_t h, w, sy, sx;
};

static inline const uint8_t *row_of(const struct source *src, Py_ssize_t y)
{
    return src->base + y * src->sy;
}

/* m RGB pixels (pixel stride sx) <-> three int32 planes of a chunk; loads go through the table t (the
 * level tables of the brightness/contrast steps not yet applied, see adjust_steps; NULL: none). */
static inline void load_chunk(const uint8_t *p, Py_ssize_t sx, int m, int32_t *R, int32_t *G, int32_t *B,
                              const uint8_t *t)
{
    if (t == NULL) { /* no pending tables: plain loads, which vectorise */
        for (int j = 0; j < m; j++) {
            R[j] = p[sx * j];
            G[j] = p[sx * j + 1];
            B[j] = p[sx * j + 2];
        }
        return;
    }
    for (int j = 0; j < m; j++) {
        R[j] = t[p[sx * j]];
        G[j] = t[p[sx * j + 1]];
        B[j] = t[p[sx * j + 2]];
    }
}

static inline void store_chunk(uint8_t *p, int m, const int32_t *R, const int32_t *G, const int32_t *B)
{
    for (int j = 0; j < m; j++) {
        p[3 * j] = (uint8_t)R[j];
        p[3 * j + 1] = (uint8_t)G[j];
        p[3 * j + 2] = (uint8_t)B[j];
    }
}

/* Hue sector i = floor(6h) (6 acts as 0): for red, green and blue, which value each takes:
 * 0 the max, 1 the one channel computed by the formula, 2 the min. */
static const uint8_t PICK[7][3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {2, 1, 0}, {1, 2, 0}, {0, 2, 1}, {0, 1, 2}};

/* One row of n pixels from p (stride sx, through t) to out, in chunks, each step a simple loop over the
 * chunk that the compiler can vectorise (selects, not branches: data-dependent branches mispredict on
 * photographs). */
VECTOR_CLONES static void hue_row(const uint8_t *p, Py_ssize_t sx, uint8_t *out, Py_ssize_t n, float shift,
                                  const uint8_t *t)
{
    const float below_six = 5.99999952316284f; /* the float32 just below 6 */
    int32_t R[CHUNK], G[CHUNK], B[CHUNK], hi[CHUNK], lo[CHUNK], which[CHUNK], mid[CHUNK];
    float sector[CHUNK], chroma[CHUNK];
    for (Py_ssize_t start = 0; start < n; start += CHUNK, p += sx * CHUNK, out += 3 * CHUNK) {
        int m = n - start < CHUNK ? (int)(n - start) : CHUNK;
        load_chunk(p, sx, m, R, G, B, t);
        for (int j = 0; j < m; j++) { /* hue_sector: sixths of a turn in [-1, 5) */
            int32_t r = R[j], g = G[j], b = B[j];
            int32_t h = r > g ? r : g, l = r < g ? r : g;
            h = h > b ? h : b;
            l = l < b ? l : b;
            int32_t is_r = -(h == r), is_g = -(h == g) & ~is_r, is_b = ~(is_r | is_g);
            int32_t num = ((g - b) & is_r) | ((b - r) & is_g) | ((r - g) & is_b);
            float cr = (float)(h - l);
            hi[j] = h;
            lo[j] = l;
            chroma[j] = cr;
            sector[j] = (float)num / (cr > FLT_MIN ? cr : FLT_MIN) + (float)((2 & is_g) | (4 & is_b));
        }
        for (int j = 0; j < m; j++) { /* rotate; the unclipped channel of hsv_to_rgb */
            float h = sector[j] / 6.0f + shift;
            float whole = (float)(int32_t)h; /* floor, without a libm call (|h| is small) */
            whole = whole > h ? whole - 1.0f : whole;
            float h6 = (h - whole) * 6.0f;
            int32_t w = (int32_t)h6;
            int32_t s = w - (3 & -(w >= 3)) - (3 & -(w >= 6));
            float k = h6 + (s == 0 ? 3.0f : (s == 1 ? 5.0f : 1.0f));
            k = k > below_six ? k - 6.0f : k;
            float tt = 4.0f - k;
            tt = k < tt ? k : tt;
            tt = tt < 1.0f ? tt : 1.0f;
            tt = tt > 0.0f ? tt : 0.0f;
            mid[j] = round_u8((float)hi[j] - tt * chroma[j]);
            which[j] = w;
        }
        for (int j = 0; j < m; j++) {
            const uint8_t *pick = PICK[which[j]];
            uint8_t values[3] = {(uint8_t)hi[j], (uint8_t)mid[j], (uint8_t)lo[j]};
            out[3 * j] = values[pick[0]];
            out[3 * j + 1] = values[pick[1]];
            out[3 * j + 2] = values[pick[2]];
        }
    }
}

VECTOR_CLONES static void saturation_row(const uint8_t *p, Py_ssize_t sx, uint8_t *out, Py_ssize_t n, float a,
                                         float rest, const uint8_t *t)
{
    int32_t R[CHUNK], G[CHUNK], B[CHUNK];
    for (Py_ssize_t start = 0; start < n; start += CHUNK, p += sx * CHUNK, out += 3 * CHUNK) {
        int m = n - start < CHUNK ? (int)(n - start) : CHUNK;
        load_chunk(p, sx, m, R, G, B, t);
        for (int j = 0; j < m; j++) {
            float g = (float)((R[j] * 9798 + G[j] * 19235 + B[j] * 3735 + 16384) >> 15) * rest;
            R[j] = round_u8((float)R[j] * a + g);
            G[j] = round_u8((float)G[j] * a + g);
            B[j] = round_u8((float)B[j] * a + g);
        }
        store_chunk(out, m, R, G, B);
    }
}

/* out = the row through t (a copy, a flip, the pending tables, or all three). */
static void lut_row(const uint8_t *p, Py_ssize_t sx, uint8_t *out, Py_ssize_t n, const uint8_t *t, int identity)
{
    if (identity && sx == 3) {
        if (out != p)
            memcpy(out, p, (size_t)(3 * n));
        return;
    }
    for (Py_ssize_t j = 0; j < n; j++, p += sx, out += 3) {
        out[0] = t[p[0]];
        out[1] = t[p[1]];
        out[2] = t[p[2]];
    }
}

VECTOR_CLONES static long long grey_total(const struct source *src, const uint8_t *t)
{
    long long total = 0;
    for (Py_ssize_t y = 0; y < src->h; y++) {
        const uint8_t *p = row_of(src, y);
        int32_t row = 0; /* at most 255 * 4096 pixels of a row in int32 */
        Py_ssize_t x = 0;
        while (x < src->w) {
            Py_ssize_t end = x + 4096 < src->w ? x + 4096 : src->w;
            row = 0;
            if (t == NULL)
                for (; x < end; x++, p += src->sx)
                    row += (p[0] * 9798 + p[1] * 19235 + p[2] * 3735 + 16384) >> 15;
            else
                for (; x < end; x++, p += src->sx)
                    row += (t[p[0]] * 9798 + t[p[1]] * 19235 + t[p[2]] * 3735 + 16384) >> 15;
            total += row;
        }
    }
    return total;
}

/* out (rows of 3 * w bytes) = the source with the steps in kinds applied, in order: brightness (0),
 * contrast (1), saturation (2), hue (3), as color_kernels.adjust_all's numpy path. Brightness and
 * contrast are tables of round(float32(level) * a [+ offset]) (the contrast offset from the rounded mean
 * grey level, a float64 quotient as numpy's); consecutive tables are composed into one (applying two
 * tables one after the other is applying their composition) and applied on the way into the next pixel
 * pass, or by a last pass. The first pass reads the caller's image and writes out; the others read out. */
static void adjust_steps(struct source src, uint8_t *out, const char *kinds, Py_ssize_t steps, const float *f)
{
    uint8_t table[256], step[256];
    int identity = 1, written = 0;
    Py_ssize_t n = src.h * src.w;
    for (int x = 0; x < 256; x++)
        table[x] = (uint8_t)x;
    for (Py_ssize_t i = 0; i < steps; i++) {
        int kind = kinds[i];
        float a = f[kind];
        if (kind == 0 || kind == 1) {
            float offset = 0.0f;
            if (kind == 1)
                offset = (float)nearbyint((double)grey_total(&src, identity ? NULL : table) / (double)n)
                         * (1.0f - a);
            for (int x = 0; x < 256; x++)
                step[x] = round_u8(kind == 1 ? (float)x * a + offset : (float)x * a);
            for (int x = 0; x < 256; x++)
                table[x] = step[table[x]];
            identity = 0;
            continue;
        }
        const uint8_t *t = identity ? NULL : table;
        for (Py_ssize_t y = 0; y < src.h; y++) {
            if (kind == 2)
                saturation_row(row_of(&src, y), src.sx, out + 3 * y * src.w, src.w, a, 1.0f - a, t);
            else
                hue_row(row_of(&src, y), src.sx, out + 3 * y * src.w, src.w, a + 1.0f, t);
        }
        for (int x = 0; x < 256; x++)
            table[x] = (uint8_t)x;
        identity = 1;
        written = 1;
        src.base = out, src.sy = 3 * src.w, src.sx = 3;
    }
    if (!written || !identity)
        for (Py_ssize_t y = 0; y < src.h; y++)
            lut_row(row_of(&src, y), src.sx, out + 3 * y * src.w, src.w, table, identity);
}

static int check_kinds(const char *kinds, Py_ssize_t steps)
{
    for (Py_ssize_t i = 0; i < steps; i++)
        if (kinds[i] < 0 || kinds[i] > 3) {
            PyErr_Format(PyExc_ValueError, "adjustment %d is not one of 0..3", (int)kinds[i]);
            return -1;
        }
    return 0;
}

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
        adjust_steps(src, (uint8_t *)img.buf, kinds, steps, f);
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
    Py_buffer out;
    if (!PyArg_ParseTuple(args, "OOy#ffff", &src_obj, &out_obj, &kinds, &steps, &f[0], &f[1], &f[2], &f[3]))
        return NULL;
    if (check_kinds(kinds, steps) < 0 || get_image(src_obj, &im) < 0)
        return NULL;
    if (get_pixels(out_obj, &out) < 0) {
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (im.c != 3 || im.sc != 1 || out.len != im.h * im.w * 3) {
        PyErr_Format(PyExc_ValueError, "image of %zd channels (channel stride %zd) and %zd pixels, output of "
                     "%zd bytes", im.c, im.sc, im.h * im.w, out.len);
        PyBuffer_Release(&im.view);
        PyBuffer_Release(&out);
        return NULL;
    }
    if (im.h > 0 && im.w > 0) {
        struct source src = {(const uint8_t *)im.view.buf, im.h, im.w, im.sy, im.sx};
        Py_BEGIN_ALLOW_THREADS
        adjust_steps(src, (uint8_t *)out.buf, kinds, steps, f);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&im.view);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* out = tables[c][level] for every pixel: float32 <C,H,W> (chw) or <H,W,C>, C-contiguous. */
VECTOR_CLONES static void lookup_pixels(const struct image *im, const float *t, float *out, int chw)
{
    const uint8_t *base = (const uint8_t *)im->view.buf;
    Py_ssize_t plane = im->h * im->w, C = im->c;
    for (Py_ssize_t y = 0; y < im->h; y++) {
        const uint8_t *row = base + y * im->sy;
        if (chw && C == 3 && im->sc == 1) {      /* the common case, one loop the compiler keeps simple */
            float *o0 = out + y * im->w, *o1 = o0 + plane, *o2 = o1 + plane;
            for (Py_ssize_t x = 0; x < im->w; x++) {
                const uint8_t *px = row + x * im->sx;
                o0[x] = t[px[0]];
                o1[x] = t[256 + px[1]];
                o2[x] = t[512 + px[2]];
            }
            continue;
        }
        for (Py_ssize_t x = 0; x < im->w; x++)
            for (Py_ssize_t c = 0; c < C; c++) {
                float v = t[256 * c + row[x * im->sx + c * im->sc]];
                if (chw)
                    out[c * plane + y * im->w + x] = v;
                else
                    out[(y * im->w + x) * C + c] = v;
            }
    }
}

/* lookup(image, tables, out, chw): see lookup_pixels. */
static PyObject *lookup(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *tables_obj, *out_obj;
    int chw;
    struct image im;
    Py_buffer tables, out;
    if (!PyArg_ParseTuple(args, "OOOp", &src_obj, &tables_obj, &out_obj, &chw))
        return NULL;
    if (get_image(src_obj, &im) < 0)
        return NULL;
    if (get_table(tables_obj, &tables, im.c * 256 * (Py_ssize_t)sizeof(float), "tables") < 0) {
        PyBuffer_Release(&im.view);
        return NULL;
    }
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&im.view);
        PyBuffer_Release(&tables);
        return NULL;
    }
    if (out.len != im.h * im.w * im.c * (Py_ssize_t)sizeof(float)) {
        PyErr_Format(PyExc_ValueError, "image of %zd values, output of %zd bytes", im.h * im.w * im.c, out.len);
    } else {
        Py_BEGIN_ALLOW_THREADS
        lookup_pixels(&im, (const float *)tables.buf, (float *)out.buf, chw);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&im.view);
    PyBuffer_Release(&tables);
    PyBuffer_Release(&out);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"adjust", adjust, METH_VARARGS,
     "adjust(rgb, kinds, b, c, s, h): the adjustments in kinds (bytes of 0..3: brightness, contrast, "
     "saturation, hue) in that order, in place; factors are rounded to float32."},
    {"adjust_from", adjust_from, METH_VARARGS,
     "adjust_from(image, out, kinds, b, c, s, h): out = the uint8 <H,W,3> image (any strides) with the "
     "adjustments applied, as adjust."},
    {"lookup", lookup, METH_VARARGS,
     "lookup(image, tables, out, chw): out[c, y, x] (chw) or out[y, x, c] = tables[c][image[y, x, c]] "
     "(float32; the image uint8 <H,W,C>, C <= 4, any strides)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
