/* The colour kernels of _kernels.c: brightness, contrast, saturation and hue on uint8 RGB, one pixel
 * pass per saturation or hue step, brightness and contrast as composed level tables.
 *
 * Each function repeats, pixel by pixel, the float32 operation sequence of its numpy counterpart in
 * color_kernels.py (the same tables, the same order of float32 operations, rounding half to even and
 * saturating), so both give the same bytes; tests/test_vision_kernels_c.py checks it on every RGB colour.
 */
#include "_kernels.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 256

/* m RGB pixels (pixel stride sx) <-> three int32 planes of a chunk; loads go through the table t (the
 * level tables of the brightness/contrast steps not yet applied, see adjust_steps; NULL: none). */
static inline void load_strided(const uint8_t *p, Py_ssize_t sx, int m, int32_t *R, int32_t *G, int32_t *B,
                                const uint8_t *t)
{
    if (t == NULL) { /* no pending tables: plain loads */
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

/* The usual strides, adjacent pixels (3) and a horizontally flipped view (-3), as constants: the
 * compiler vectorises the plain loads of a known stride. */
static inline void load_chunk(const uint8_t *p, Py_ssize_t sx, int m, int32_t *R, int32_t *G, int32_t *B,
                              const uint8_t *t)
{
    if (sx == 3)
        load_strided(p, 3, m, R, G, B, t);
    else if (sx == -3)
        load_strided(p, -3, m, R, G, B, t);
    else
        load_strided(p, sx, m, R, G, B, t);
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
    if (sx == 3) { /* adjacent pixels: one table for every byte */
        for (Py_ssize_t k = 0; k < 3 * n; k++)
            out[k] = t[p[k]];
        return;
    }
    for (Py_ssize_t j = 0; j < n; j++, p += sx, out += 3) {
        out[0] = t[p[0]];
        out[1] = t[p[1]];
        out[2] = t[p[2]];
    }
}

/* The sum of the rounded fixed-point grey levels of n pixels at p (stride sx), through t unless NULL. */
static inline long long grey_run(const uint8_t *p, Py_ssize_t sx, Py_ssize_t n, const uint8_t *t)
{
    long long total = 0;
    for (Py_ssize_t x = 0; x < n;) {
        Py_ssize_t end = x + 4096 < n ? x + 4096 : n;
        int32_t part = 0; /* at most 255 * 4096 pixels in int32 */
        if (t == NULL)
            for (; x < end; x++, p += sx)
                part += (p[0] * 9798 + p[1] * 19235 + p[2] * 3735 + 16384) >> 15;
        else
            for (; x < end; x++, p += sx)
                part += (t[p[0]] * 9798 + t[p[1]] * 19235 + t[p[2]] * 3735 + 16384) >> 15;
        total += part;
    }
    return total;
}

/* The grey sum of a row of n pixels at p, stride sx: AVX2 for what it takes, then the scalar loop. */
static long long grey_row(const uint8_t *p, Py_ssize_t sx, Py_ssize_t n, const uint8_t *t, const struct pending *pd)
{
    long long total = 0;
    Py_ssize_t done = sx == 3 ? simd_grey_run(p, n, pd, &total) : 0;
    return total + grey_run(p + done * sx, sx, n - done, t);
}

VECTOR_CLONES static long long grey_total(const struct source *src, const uint8_t *t, const struct pending *pd)
{
    long long total = 0;
    for (Py_ssize_t y = 0; y < src->h; y++) {
        const uint8_t *p = row_of(src, y);
        if (src->sx == 3 || src->sx == -3) /* a sum: a flipped row read forwards, at a constant stride */
            total += grey_row(src->sx == 3 ? p : p - 3 * (src->w - 1), 3, src->w, t, pd);
        else
            total += grey_run(p, src->sx, src->w, t);
    }
    return total;
}

/* Row y of a saturation pass (see adjust_steps): AVX2 for what it takes, then the scalar loop; with emit,
 * the row's pixels go through the level run lv (the AVX2 part straight to lv->out, the rest through row). */
static void saturation_pass_row(const struct source *src, Py_ssize_t y, uint8_t *row, float a, const uint8_t *t,
                                const struct pending *pd, const struct levels *lv, int emit)
{
    const uint8_t *p = row_of(src, y);
    Py_ssize_t done = simd_saturation_row(p, src->sx, row, src->w, a, 1.0f - a, pd, emit ? lv : NULL, y);
    if (done < src->w)
        saturation_row(p + done * src->sx, src->sx, row + 3 * done, src->w - done, a, 1.0f - a, t);
    if (emit && done < src->w)
        levels_from(lv, row, 3, 1, 3, y, done);
}

/* The level run of lv on the source read through table (identity: no table), as one pass. With a table,
 * the table composed with the run's, looked up one value at a time (measured faster on AMD Zen 3 than the
 * AVX2 loop's gathers, or than the pending steps' float32 operations followed by the run's arithmetic). */
static void levels_through(const struct source *src, const uint8_t *table, int identity, const struct levels *lv)
{
    float composed[3 * 256];
    struct levels through = *lv;
    if (identity) {
        for (Py_ssize_t y = 0; y < src->h; y++)
            levels_row(lv, row_of(src, y), src->sx, 1, 3, y);
        return;
    }
    for (int c = 0; c < 3; c++)
        for (int x = 0; x < 256; x++)
            composed[256 * c + x] = lv->t[256 * c + table[x]];
    through.t = composed;
    through.k = NULL; /* the arithmetic maps a level, not a level through the table */
    for (Py_ssize_t y = 0; y < src->h; y++)
        levels_from(&through, row_of(src, y), src->sx, 1, 3, y, 0);
}

/* out (rows of 3 * w bytes) = the source with the steps in kinds applied, in order: brightness (0),
 * contrast (1), saturation (2), hue (3), as color_kernels.adjust_all's numpy path. Brightness and
 * contrast are tables of round(float32(level) * a [+ offset]) (the contrast offset from the rounded mean
 * grey level, a float64 quotient as numpy's); consecutive tables are composed into one (applying two
 * tables one after the other is applying their composition) and applied on the way into the next pixel
 * pass, or by a last pass. The first pass reads the caller's image and writes out; the others read out.
 * With lv (a level run after the adjustments), the last pass writes floats: a saturation or hue pass
 * that ends the steps hands each row it wrote to the level run while it is in cache, and pending tables
 * are composed with the run's tables into one float pass (the same values as the uint8 result looked up). */
void adjust_steps(struct source src, uint8_t *out, const char *kinds, Py_ssize_t steps, const float *f,
                  const struct levels *lv)
{
    uint8_t table[256], step[256];
    int32_t wide[256]; /* table as int32, for the AVX2 loops (see struct pending) */
    struct pending pd = {0, {0}, {0}, NULL};
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
                offset = (float)nearbyint((double)grey_total(&src, identity ? NULL : table, &pd) / (double)n)
                         * (1.0f - a);
            for (int x = 0; x < 256; x++)
                step[x] = round_u8(kind == 1 ? (float)x * a + offset : (float)x * a);
            for (int x = 0; x < 256; x++)
                wide[x] = table[x] = step[table[x]];
            if (pd.n < PENDING_MAX)
                pd.a[pd.n] = a, pd.offset[pd.n] = offset;
            pd.n++;
            pd.t32 = wide;
            identity = 0;
            continue;
        }
        const uint8_t *t = identity ? NULL : table;
        int emit = lv != NULL && i == steps - 1;
        for (Py_ssize_t y = 0; y < src.h; y++) {
            uint8_t *row = out + 3 * y * src.w;
            if (kind == 2) {
                saturation_pass_row(&src, y, row, a, t, &pd, lv, emit);
                continue;
            }
            hue_row(row_of(&src, y), src.sx, row, src.w, a + 1.0f, t);
            if (emit)
                levels_row(lv, row, 3, 1, 3, y);
        }
        for (int x = 0; x < 256; x++)
            table[x] = (uint8_t)x;
        pd = (struct pending){0, {0}, {0}, NULL};
        identity = 1;
        written = 1;
        src.base = out, src.sy = 3 * src.w, src.sx = 3;
    }
    if (written && identity)
        return;
    if (lv != NULL)
        levels_through(&src, table, identity, lv);
    else
        for (Py_ssize_t y = 0; y < src.h; y++)
            lut_row(row_of(&src, y), src.sx, out + 3 * y * src.w, src.w, table, identity);
}

/* The adjustments, then the level run into lv (the uint8 result only in a scratch block); 0 or -1 when
 * the scratch block could not be allocated. */
int adjust_into_levels(struct source src, const char *kinds, Py_ssize_t steps, const float *f,
                       const struct levels *lv)
{
    uint8_t *scratch = NULL;
    if (src.h == 0 || src.w == 0)
        return 0;
    if (memchr(kinds, 2, (size_t)steps) || memchr(kinds, 3, (size_t)steps)) { /* a pixel pass writes rows */
        scratch = malloc((size_t)(src.h * src.w * 3));
        if (scratch == NULL)
            return -1;
    }
    adjust_steps(src, scratch, kinds, steps, f, lv);
    free(scratch);
    return 0;
}
