/* AVX2 forms of the three hottest pixel loops of the colour kernels (the saturation pass, the level
 * run's table pass and the contrast step's grey sum), eight pixels at a time, for RGB rows whose pixels
 * are adjacent (stride 3) or mirrored (stride -3, a flipped view). Each repeats the scalar loop's integer
 * and float32 operations in the same order (a multiply, then an add: no fused multiply-add; rounding to
 * nearest even, as round_u8), so both give the same bytes; the caller runs the scalar loop on what is
 * left of a row (fewer than eight pixels) and on every other layout.
 *
 * Used when the CPU has AVX2 (checked once when the module loads; _kernels.use_simd turns it off, for
 * tests that compare both paths). Other compilers and machines build stubs that handle nothing.
 */
#include "_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

static int enabled;

/* Byte shuffles that pick channel c of 8 pixels from 24 bytes (the first 16 in one register, the last 8 in
 * another), in row order or mirrored: [mirrored][c][part]. Filled once by simd_init. */
static int8_t PICKS[2][3][2][16];

int simd_init(void)
{
    for (int mirrored = 0; mirrored < 2; mirrored++)
        for (int c = 0; c < 3; c++) {
            for (int k = 0; k < 16; k++)
                PICKS[mirrored][c][0][k] = PICKS[mirrored][c][1][k] = -1;
            for (int k = 0; k < 8; k++) {
                int byte = 3 * (mirrored ? 7 - k : k) + c;
                PICKS[mirrored][c][byte < 16 ? 0 : 1][k] = (int8_t)(byte < 16 ? byte : byte - 16);
            }
        }
    __builtin_cpu_init();
    enabled = __builtin_cpu_supports("avx2") != 0;
    return enabled;
}

int simd_use(int on)
{
    int was = enabled;
    enabled = on && __builtin_cpu_supports("avx2");
    return was;
}

static AVX2 inline __m256i round8(__m256 x);

/* Eight levels through the pending steps pd (see struct pending): their float32 operations, or a gather
 * from their table when there are more of them than PENDING_MAX. */
static AVX2 inline __m256i pending8(__m256i v, const struct pending *pd)
{
    if (pd == NULL || pd->t32 == NULL)
        return v;
    if (pd->n > PENDING_MAX)
        return _mm256_i32gather_epi32((const int *)pd->t32, v, 4);
    for (int k = 0; k < pd->n; k++)
        v = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(pd->a[k])),
                                 _mm256_set1_ps(pd->offset[k])));
    return v;
}

/* The 8 pixels at q (24 bytes; mirrored: the last of them first) as three int32 vectors, through the
 * pending steps pd unless NULL. */
static AVX2 inline void load8(const uint8_t *q, int mirrored, const struct pending *pd, __m256i *R, __m256i *G,
                              __m256i *B)
{
    const __m128i lo = _mm_loadu_si128((const __m128i *)q), hi = _mm_loadl_epi64((const __m128i *)(q + 16));
    __m256i *out[3] = {R, G, B};
    for (int c = 0; c < 3; c++) {
        const __m128i a = _mm_shuffle_epi8(lo, _mm_loadu_si128((const __m128i *)PICKS[mirrored][c][0]));
        const __m128i b = _mm_shuffle_epi8(hi, _mm_loadu_si128((const __m128i *)PICKS[mirrored][c][1]));
        *out[c] = pending8(_mm256_cvtepu8_epi32(_mm_or_si128(a, b)), pd);
    }
}

/* Eight int32 values in 0..255 as the low 8 bytes. */
static AVX2 inline __m128i narrow8(__m256i v)
{
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_packus_epi16(words, words);
}

/* The 8 pixels as 24 interleaved RGB bytes at o. */
static AVX2 inline void store8(uint8_t *o, __m256i R, __m256i G, __m256i B)
{
    const __m128i rg = _mm_unpacklo_epi64(narrow8(R), narrow8(G)), b = narrow8(B);
    const __m128i first = _mm_or_si128(
        _mm_shuffle_epi8(rg, _mm_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5)),
        _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1)));
    const __m128i last = _mm_or_si128(
        _mm_shuffle_epi8(rg, _mm_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1)),
        _mm_shuffle_epi8(b, _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1)));
    _mm_storeu_si128((__m128i *)o, first);
    _mm_storel_epi64((__m128i *)(o + 16), last);
}

/* round_u8 of 8 floats, as int32: clamp to [0, 255] (NaN -> 0: maxps returns its second operand when
 * the first is NaN), then round half to even (the default rounding mode, as round_u8's magic add). */
static AVX2 inline __m256i round8(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    return _mm256_cvtps_epi32(x);
}

/* The fixed-point grey level (R * 9798 + G * 19235 + B * 3735 + 16384) >> 15 of 8 pixels. */
static AVX2 inline __m256i grey8(__m256i R, __m256i G, __m256i B)
{
    __m256i s = _mm256_add_epi32(_mm256_mullo_epi32(R, _mm256_set1_epi32(9798)),
                                 _mm256_mullo_epi32(G, _mm256_set1_epi32(19235)));
    s = _mm256_add_epi32(_mm256_add_epi32(s, _mm256_mullo_epi32(B, _mm256_set1_epi32(3735))),
                         _mm256_set1_epi32(16384));
    return _mm256_srai_epi32(s, 15);
}

/* Row y of the level run lv (<3,H,W> floats) from 8 adjusted pixels at column x. */
static AVX2 inline void emit8(const struct levels *lv, Py_ssize_t y, Py_ssize_t x, __m256i R, __m256i G, __m256i B)
{
    float *o = lv->out + y * lv->w + x;
    _mm256_storeu_ps(o, _mm256_i32gather_ps(lv->t, R, 4));
    _mm256_storeu_ps(o + lv->plane, _mm256_i32gather_ps(lv->t + 256, G, 4));
    _mm256_storeu_ps(o + 2 * lv->plane, _mm256_i32gather_ps(lv->t + 512, B, 4));
}

static inline int takes(Py_ssize_t sx)
{
    return enabled && (sx == 3 || sx == -3);
}

/* The first 8 * k pixels of saturation_row (same arguments, pd: its table's pending steps), written to
 * out, or with lv (a <3,H,W> level run) looked up into row y of lv->out instead; the number of pixels done. */
AVX2 Py_ssize_t simd_saturation_row(const uint8_t *p, Py_ssize_t sx, uint8_t *out, Py_ssize_t n, float a, float rest,
                                    const struct pending *pd, const struct levels *lv, Py_ssize_t y)
{
    if (!takes(sx) || (lv != NULL && !lv->chw))
        return 0;
    const int mirrored = sx < 0;
    const __m256 va = _mm256_set1_ps(a), vrest = _mm256_set1_ps(rest);
    Py_ssize_t x = 0;
    for (; x + 8 <= n; x += 8) {
        __m256i R, G, B;
        load8(mirrored ? p - 3 * (x + 7) : p + 3 * x, mirrored, pd, &R, &G, &B);
        const __m256 g = _mm256_mul_ps(_mm256_cvtepi32_ps(grey8(R, G, B)), vrest);
        R = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(R), va), g));
        G = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(G), va), g));
        B = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(B), va), g));
        if (lv != NULL)
            emit8(lv, y, x, R, G, B);
        else
            store8(out + 3 * x, R, G, B);
    }
    return x;
}

/* The first 8 * k pixels of levels_row for three adjacent channels into <3,H,W>; the number done. */
AVX2 Py_ssize_t simd_levels_row(const struct levels *lv, const uint8_t *p, Py_ssize_t sx, Py_ssize_t y)
{
    if (!takes(sx) || !lv->chw)
        return 0;
    const int mirrored = sx < 0;
    Py_ssize_t x = 0;
    for (; x + 8 <= lv->w; x += 8) {
        __m256i R, G, B;
        load8(mirrored ? p - 3 * (x + 7) : p + 3 * x, mirrored, NULL, &R, &G, &B);
        emit8(lv, y, x, R, G, B);
    }
    return x;
}

/* The grey sum of the first 8 * k of n adjacent pixels at p (through the pending steps pd unless NULL)
 * added to *total; the number done. Each lane sums at most 4096 * 255 before it is flushed: no int32
 * overflow. */
AVX2 Py_ssize_t simd_grey_run(const uint8_t *p, Py_ssize_t n, const struct pending *pd, long long *total)
{
    if (!enabled)
        return 0;
    Py_ssize_t x = 0;
    while (x + 8 <= n) {
        __m256i sum = _mm256_setzero_si256();
        for (int k = 0; k < 4096 && x + 8 <= n; k++, x += 8) {
            __m256i R, G, B;
            load8(p + 3 * x, 0, pd, &R, &G, &B);
            sum = _mm256_add_epi32(sum, grey8(R, G, B));
        }
        int32_t lanes[8];
        _mm256_storeu_si256((__m256i *)lanes, sum);
        for (int k = 0; k < 8; k++)
            *total += lanes[k];
    }
    return x;
}

#else /* no AVX2 forms: the scalar loops do everything */

int simd_init(void)
{
    return 0;
}

int simd_use(int on)
{
    (void)on;
    return 0;
}

Py_ssize_t simd_saturation_row(const uint8_t *p, Py_ssize_t sx, uint8_t *out, Py_ssize_t n, float a, float rest,
                               const struct pending *pd, const struct levels *lv, Py_ssize_t y)
{
    return 0;
}

Py_ssize_t simd_levels_row(const struct levels *lv, const uint8_t *p, Py_ssize_t sx, Py_ssize_t y)
{
    return 0;
}

Py_ssize_t simd_grey_run(const uint8_t *p, Py_ssize_t n, const struct pending *pd, long long *total)
{
    return 0;
}

#endif
