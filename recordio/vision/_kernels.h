/* Shared declarations of the colour kernels (_kernels_colour.c), the level tables pass
 * (_kernels_levels.c) and their Python entry points (_kernels.c). See _kernels.c for what they compute.
 *
 * Build flags forbid contracting a * b + c into a fused multiply-add (it would round once, not twice);
 * -fno-trapping-math only lets the compiler turn selects into branch-free code (results unchanged).
 */
#ifndef RECORDIO_VISION_KERNELS_H
#define RECORDIO_VISION_KERNELS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Pixel loops are built twice, for AVX2 and for the baseline, and picked when the module loads
 * (the same float32 operations either way: AVX2 has no fused multiply-add, and contraction is off). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

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

/* Where a pass reads its pixels: an RGB image with any row stride sy and pixel stride sx (a flipped
 * view has a negative one), channels adjacent. */
struct source {
    const uint8_t *base;
    Py_ssize_t h, w, sy, sx;
};

static inline const uint8_t *row_of(const struct source *src, Py_ssize_t y)
{
    return src->base + y * src->sy;
}

/* Where a level run writes: float32 <C,H,W> (chw) or <H,W,C>, C-contiguous, of an image w pixels wide
 * and plane = h * w pixels; t holds C tables of 256 floats, one per channel. Optionally (k not NULL, three
 * channels) the run as arithmetic, the same values computed instead of looked up: level x of channel c is
 * ((((float)x * k[c]) + k[3 + c]) - k[6 + c]) / k[9 + c], four float32 operations in that order (an op the
 * run lacks has an operand that changes nothing: * 1, + -0, - 0, / 1). The caller has checked that this
 * gives the tables' values on every level (fusion.py). */
struct levels {
    const float *t;
    float *out;
    Py_ssize_t w, plane;
    int chw;
    const float *k;
};

/* Row y of the level run: out = t[c][level] for the w pixels at p (pixel stride sx, channel stride sc). */
void levels_row(const struct levels *lv, const uint8_t *p, Py_ssize_t sx, Py_ssize_t sc, Py_ssize_t c,
                Py_ssize_t y);

/* The adjustments in kinds (0 brightness, 1 contrast, 2 saturation, 3 hue), in order, with factors f[kind]:
 * out (rows of 3 * w bytes) = the adjusted source. With lv, the result goes through the level run's
 * tables into lv->out instead, and out is only scratch space (it may then be NULL when no saturation or
 * hue step is in kinds). */
void adjust_steps(struct source src, uint8_t *out, const char *kinds, Py_ssize_t steps, const float *f,
                  const struct levels *lv);

/* adjust_steps into lv with a scratch block of its own where a pixel pass needs one; 0, or -1 when that
 * block could not be allocated. */
int adjust_into_levels(struct source src, const char *kinds, Py_ssize_t steps, const float *f,
                       const struct levels *lv);

/* The brightness/contrast steps pending on the way into a pixel pass (see adjust_steps): level x becomes
 * round_u8((float)x * a[k] + offset[k]) for k = 0 .. n - 1 in turn (brightness: offset 0, which changes
 * no product), the values of t32, their composition as an int32 table. No step pending: t32 NULL. The
 * AVX2 loops compute the first PENDING_MAX steps' float32 operations (cheaper than a table gather); with
 * more steps (kinds may repeat), they gather from t32. */
#define PENDING_MAX 4
struct pending {
    int n;
    float a[PENDING_MAX], offset[PENDING_MAX];
    const int32_t *t32;
};

/* The AVX2 forms of the hottest loops (_kernels_simd.c): each does the first 8 * k pixels of a row and
 * returns how many it did (0 where it does not apply: no AVX2, another layout, use_simd off); the scalar
 * loop does the rest. pd: the steps pending on the way in. */
int simd_init(void);
int simd_use(int on);
Py_ssize_t simd_saturation_row(const uint8_t *p, Py_ssize_t sx, uint8_t *out, Py_ssize_t n, float a, float rest,
                               const struct pending *pd, const struct levels *lv, Py_ssize_t y);
Py_ssize_t simd_levels_row(const struct levels *lv, const uint8_t *p, Py_ssize_t sx, Py_ssize_t y);
Py_ssize_t simd_grey_run(const uint8_t *p, Py_ssize_t n, const struct pending *pd, long long *total);

/* The AVX2 loops of the bilinear resize (_kernels_resize.c), three adjacent channels, on n interleaved
 * elements (3 per pixel); each returns how many it did. simd_hresize_row: out[e] = p[ofs[e]] * a0 +
 * p[ofs[e] + 3] * a1 (alpha[e]: a0 low, a1 high; p readable 128 bytes past the last ofs); where base is
 * not NULL, group g of `group` elements (RESIZE_GROUP: the AVX-512 VBMI plan, 8: the AVX2 one; see
 * plan_groups in _kernels_resize.c) has its samples in the bytes at p + base[g] (base[g] >= 0), placed
 * as the 64 bytes idx[64 g ...] say. simd_vresize_row: out[e] from the horizontal rows H0, H1 and the
 * row coefficients b0, b1. simd_wide: whether the AVX-512 loops run; simd_use_wide turns them off
 * (tests); simd_on: whether the AVX2 loops run. */
#define RESIZE_GROUP 32
Py_ssize_t simd_hresize_row(const uint8_t *p, const int32_t *ofs, const int32_t *alpha, const int32_t *base,
                            const uint8_t *idx, int group, int32_t *out, Py_ssize_t n);
Py_ssize_t simd_vresize_row(const int32_t *H0, const int32_t *H1, Py_ssize_t n, int16_t b0, int16_t b1, uint8_t *out);
int simd_wide(void);
int simd_on(void);
int simd_use_wide(int on);

/* What a resize reads: a part of h x w pixels (row stride sy, c adjacent channels) at base, whose pixel
 * (0, 0) is pixel (y0, x0) of the whole full_h x full_w image the resize is of (the whole image itself:
 * origin 0, the same sizes). */
struct resize_source {
    const uint8_t *base;
    Py_ssize_t h, w, sy, c, full_h, full_w, y0, x0;
};

/* out (oh x ow pixels of c adjacent channels, row stride osy) = rows oy.. and columns ox.. of the (dh, dw)
 * INTER_LINEAR resize of the whole image, as cv::resize, read from the part; -1 when out of memory, -2
 * when the window reads pixels outside the part. */
int resize_linear(const struct resize_source *src, uint8_t *out, Py_ssize_t osy, Py_ssize_t dh, Py_ssize_t dw,
                  Py_ssize_t oy, Py_ssize_t ox, Py_ssize_t oh, Py_ssize_t ow);

/* levels_row from column x0 on (p still points at the row's first pixel). */
void levels_from(const struct levels *lv, const uint8_t *p, Py_ssize_t sx, Py_ssize_t sc, Py_ssize_t c,
                 Py_ssize_t y, Py_ssize_t x0);

/* The entry points' arguments (_kernels_args.c): each fills its view or struct, or returns -1 with an
 * exception set (and nothing held). get_pixels: a writable C-contiguous buffer of whole RGB pixels;
 * get_table: a C-contiguous buffer of exactly size bytes; get_image: a uint8 <H,W,C> image, 1 to 4
 * channels, any strides (a flipped view has a negative one); get_rgb: such an image with 3 adjacent
 * channels, as a source; get_floats: a writable C-contiguous buffer of exactly values float32;
 * check_kinds: adjustment kinds all within 0..3; get_program: a level run's arithmetic (twelve float32)
 * into k with lv->k pointing at it, or lv->k NULL for None. */
struct image {
    Py_buffer view;
    Py_ssize_t h, w, c, sy, sx, sc;
};

int get_pixels(PyObject *obj, Py_buffer *view);
int get_table(PyObject *obj, Py_buffer *view, Py_ssize_t size, const char *what);
int get_image(PyObject *obj, struct image *im);
int get_rgb(PyObject *obj, struct image *im, struct source *src);
int get_floats(PyObject *obj, Py_buffer *out, Py_ssize_t values);
int check_kinds(const char *kinds, Py_ssize_t steps);
int get_program(PyObject *obj, float *k, struct levels *lv);

#endif
