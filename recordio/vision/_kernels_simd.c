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
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

static int enabled, wide; /* AVX2; AVX-512 with byte permutes (VBMI) */

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
    wide = enabled && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
    return enabled;
}

int simd_use(int on)
{
    int was = enabled;
    enabled = on && __builtin_cpu_supports("avx2");
    wide = enabled && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
    return was;
}

int simd_use_wide(int on)
{
    int was = wide;
    wide = on && enabled && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
    return was;
}

static AVX2 inline __m256i round8(__m256 x);

/* The pending steps pd (see struct pending) held in registers for one loop: n steps of a multiply and
 * an add (n = PENDING_MAX + 1: more than that, gathered from t32; n = 0: none). */
struct vpending {
    __m256 a[PENDING_MAX], offset[PENDING_MAX];
    const int *t32;
};

#define GATHERED (PENDING_MAX + 1)

static AVX2 inline int vpending_of(const struct pending *pd, struct vpending *vp)
{
    vp->t32 = NULL;
    if (pd == NULL || pd->t32 == NULL)
        return 0;
    vp->t32 = (const int *)pd->t32;
    if (pd->n > PENDING_MAX)
        return GATHERED;
    for (int k = 0; k < pd->n; k++) {
        vp->a[k] = _mm256_set1_ps(pd->a[k]);
        vp->offset[k] = _mm256_set1_ps(pd->offset[k]);
    }
    return pd->n;
}

/* Eight levels through the n pending steps of vp: their float32 operations, or a gather from their
 * table. Inlined where n is a constant, so each count gets its own loop. */
static AVX2 inline __attribute__((always_inline)) __m256i pending8(__m256i v, const struct vpending *vp, int n)
{
    if (n == GATHERED)
        return _mm256_i32gather_epi32(vp->t32, v, 4);
    for (int k = 0; k < n; k++)
        v = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), vp->a[k]), vp->offset[k]));
    return v;
}

/* The 8 pixels at q (24 bytes; mirrored: the last of them first) as three int32 vectors, through the
 * n pending steps of vp. */
static AVX2 inline __attribute__((always_inline)) void load8(const uint8_t *q, int mirrored,
                                                             const struct vpending *vp, int n, __m256i *R,
                                                             __m256i *G, __m256i *B)
{
    const __m128i lo = _mm_loadu_si128((const __m128i *)q), hi = _mm_loadl_epi64((const __m128i *)(q + 16));
    __m256i *out[3] = {R, G, B};
    for (int c = 0; c < 3; c++) {
        const __m128i a = _mm_shuffle_epi8(lo, _mm_loadu_si128((const __m128i *)PICKS[mirrored][c][0]));
        const __m128i b = _mm_shuffle_epi8(hi, _mm_loadu_si128((const __m128i *)PICKS[mirrored][c][1]));
        *out[c] = pending8(_mm256_cvtepu8_epi32(_mm_or_si128(a, b)), vp, n);
    }
}

/* Calls body(N) with N the constant equal to n (0 .. GATHERED): one loop per count of pending steps. */
#define FOR_PENDING(n, body)                                                                                       \
    switch (n) {                                                                                                   \
    case 0: body(0); break;                                                                                        \
    case 1: body(1); break;                                                                                        \
    case 2: body(2); break;                                                                                        \
    case 3: body(3); break;                                                                                        \
    case 4: body(4); break;                                                                                        \
    default: body(GATHERED); break;                                                                                \
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

/* Eight levels of channel c through the level run's program (see struct levels): its four float32
 * operations in order, as numpy does them one op at a time. */
static AVX2 inline __m256 program8(const float *k, __m256i v, int c)
{
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_broadcast_ss(k + c));
    f = _mm256_add_ps(f, _mm256_broadcast_ss(k + 3 + c));
    f = _mm256_sub_ps(f, _mm256_broadcast_ss(k + 6 + c));
    return _mm256_div_ps(f, _mm256_broadcast_ss(k + 9 + c));
}

/* Row y of the level run lv (<3,H,W> floats) from 8 adjusted pixels at column x: computed by its program
 * where it has one (cheaper than three table gathers), else gathered from its tables. */
static AVX2 inline void emit8(const struct levels *lv, Py_ssize_t y, Py_ssize_t x, __m256i R, __m256i G, __m256i B)
{
    float *o = lv->out + y * lv->w + x;
    if (lv->k != NULL) {
        _mm256_storeu_ps(o, program8(lv->k, R, 0));
        _mm256_storeu_ps(o + lv->plane, program8(lv->k, G, 1));
        _mm256_storeu_ps(o + 2 * lv->plane, program8(lv->k, B, 2));
        return;
    }
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
    struct vpending vp;
    const int steps = vpending_of(pd, &vp);
    Py_ssize_t x = 0;
#define SATURATION_LOOP(N)                                                                                         \
    for (; x + 8 <= n; x += 8) {                                                                                   \
        __m256i R, G, B;                                                                                           \
        load8(mirrored ? p - 3 * (x + 7) : p + 3 * x, mirrored, &vp, N, &R, &G, &B);                              \
        const __m256 g = _mm256_mul_ps(_mm256_cvtepi32_ps(grey8(R, G, B)), vrest);                                 \
        R = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(R), va), g));                                    \
        G = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(G), va), g));                                    \
        B = round8(_mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(B), va), g));                                    \
        if (lv != NULL)                                                                                            \
            emit8(lv, y, x, R, G, B);                                                                              \
        else                                                                                                       \
            store8(out + 3 * x, R, G, B);                                                                          \
    }
    FOR_PENDING(steps, SATURATION_LOOP)
#undef SATURATION_LOOP
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
        load8(mirrored ? p - 3 * (x + 7) : p + 3 * x, mirrored, NULL, 0, &R, &G, &B);
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
    struct vpending vp;
    const int steps = vpending_of(pd, &vp);
    Py_ssize_t x = 0;
    while (x + 8 <= n) {
        __m256i sum = _mm256_setzero_si256();
        int k = 0;
#define GREY_LOOP(N)                                                                                               \
    for (; k < 4096 && x + 8 <= n; k++, x += 8) {                                                                  \
        __m256i R, G, B;                                                                                           \
        load8(p + 3 * x, 0, &vp, N, &R, &G, &B);                                                                   \
        sum = _mm256_add_epi32(sum, grey8(R, G, B));                                                               \
    }
        FOR_PENDING(steps, GREY_LOOP)
#undef GREY_LOOP
        int32_t lanes[8];
        _mm256_storeu_si256((__m256i *)lanes, sum);
        for (int j = 0; j < 8; j++)
            *total += lanes[j];
    }
    return x;
}

/* Per output element e: the 32 bits at p + ofs[e] hold the pair's samples in bytes 0 and 3 (the next
 * pixel's same channel); eight loads, one shuffle to two int16 lanes, one multiply-add with alpha[e]. (Eight
 * scalar loads and inserts, not a 32-bit gather: measured faster on AMD Zen 3, where gathers are
 * microcoded.) */
static AVX2 inline void hresize8(const uint8_t *p, const int32_t *ofs, const int32_t *alpha, int32_t *out)
{
    const __m256i pick = _mm256_setr_epi8(0, -1, 3, -1, 4, -1, 7, -1, 8, -1, 11, -1, 12, -1, 15, -1,
                                          0, -1, 3, -1, 4, -1, 7, -1, 8, -1, 11, -1, 12, -1, 15, -1);
    int32_t w[8];
    for (int j = 0; j < 8; j++)
        memcpy(&w[j], p + ofs[j], 4);
    const __m256i v = _mm256_setr_epi32(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
    _mm256_storeu_si256((__m256i *)out,
                        _mm256_madd_epi16(_mm256_shuffle_epi8(v, pick), _mm256_loadu_si256((const __m256i *)alpha)));
}

#define WIDE __attribute__((target("avx2,avx512f,avx512bw,avx512vbmi")))

/* A group of RESIZE_GROUP elements whose samples lie in the 128 bytes at p + base: one two-register byte
 * permute puts each element's (left, right) samples side by side, two widenings and two multiply-adds
 * finish them. */
static WIDE inline void hresize_group(const uint8_t *p, int32_t base, const uint8_t *idx, const int32_t *alpha,
                                      int32_t *out)
{
    const __m512i pairs = _mm512_permutex2var_epi8(_mm512_loadu_si512(p + base), _mm512_loadu_si512(idx),
                                                   _mm512_loadu_si512(p + base + 64));
    const __m512i lo = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(pairs));
    const __m512i hi = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(pairs, 1));
    _mm512_storeu_si512(out, _mm512_madd_epi16(lo, _mm512_loadu_si512(alpha)));
    _mm512_storeu_si512(out + 16, _mm512_madd_epi16(hi, _mm512_loadu_si512(alpha + 16)));
}

static WIDE Py_ssize_t hresize_wide(const uint8_t *p, const int32_t *ofs, const int32_t *alpha, const int32_t *base,
                                    const uint8_t *idx, int32_t *out, Py_ssize_t n)
{
    Py_ssize_t e = 0;
    for (Py_ssize_t g = 0; e + RESIZE_GROUP <= n; e += RESIZE_GROUP, g++) {
        if (base[g] >= 0)
            hresize_group(p, base[g], idx + 64 * g, alpha + e, out + e);
        else
            for (int k = 0; k < RESIZE_GROUP; k += 8)
                hresize8(p, ofs + e + k, alpha + e + k, out + e + k);
    }
    return e;
}

/* A group of 8 elements whose samples lie in the 32 bytes at p + base (the AVX2 plan): each half of the span
 * copied to both lanes, one byte shuffle of each, a blend by the sample's half, one multiply-add. */
static AVX2 inline void hresize8_span(const uint8_t *p, int32_t base, const uint8_t *idx, const int32_t *alpha,
                                      int32_t *out)
{
    const __m256i v = _mm256_loadu_si256((const __m256i *)(p + base));
    const __m256i ctl = _mm256_loadu_si256((const __m256i *)idx);
    const __m256i first = _mm256_shuffle_epi8(_mm256_permute2x128_si256(v, v, 0x00), ctl);
    const __m256i second = _mm256_shuffle_epi8(_mm256_permute2x128_si256(v, v, 0x11), ctl);
    const __m256i pairs = _mm256_blendv_epi8(first, second, _mm256_loadu_si256((const __m256i *)(idx + 32)));
    _mm256_storeu_si256((__m256i *)out, _mm256_madd_epi16(pairs, _mm256_loadu_si256((const __m256i *)alpha)));
}

/* The horizontal pass of a row: groups by byte permutes where the plan (base, group) has them, else eight
 * loads per 8 elements; returns the number of elements done. */
AVX2 Py_ssize_t simd_hresize_row(const uint8_t *p, const int32_t *ofs, const int32_t *alpha, const int32_t *base,
                                 const uint8_t *idx, int group, int32_t *out, Py_ssize_t n)
{
    if (!enabled)
        return 0;
    Py_ssize_t e = 0;
    if (base != NULL && group == RESIZE_GROUP && wide)
        e = hresize_wide(p, ofs, alpha, base, idx, out, n);
    else if (base != NULL && group == 8)
        for (Py_ssize_t g = 0; e + 8 <= n; e += 8, g++) {
            if (base[g] >= 0)
                hresize8_span(p, base[g], idx + 64 * g, alpha + e, out + e);
            else
                hresize8(p, ofs + e, alpha + e, out + e);
        }
    for (; e + 8 <= n; e += 8)
        hresize8(p, ofs + e, alpha + e, out + e);
    return e;
}

int simd_wide(void)
{
    return wide;
}

int simd_on(void)
{
    return enabled;
}

/* (H >> 4) of 16 elements as int16 (at most 255 * 2049 >> 4: no saturation), in order. */
static AVX2 inline __m256i shifted16(const int32_t *H)
{
    const __m256i lo = _mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)H), 4);
    const __m256i hi = _mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)(H + 8)), 4);
    return _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8);
}

/* 32 elements per step: (((b0 * s0) >> 16) + ((b1 * s1) >> 16) + 2) >> 2 in int16 lanes (OpenCV's own
 * vector form: the high half of a 16-bit product is the >> 16). */
AVX2 Py_ssize_t simd_vresize_row(const int32_t *H0, const int32_t *H1, Py_ssize_t n, int16_t b0, int16_t b1, uint8_t *out)
{
    if (!enabled)
        return 0;
    const __m256i vb0 = _mm256_set1_epi16(b0), vb1 = _mm256_set1_epi16(b1), two = _mm256_set1_epi16(2);
    Py_ssize_t e = 0;
    for (; e + 32 <= n; e += 32) {
        __m256i r[2];
        for (int h = 0; h < 2; h++) {
            const __m256i sum = _mm256_add_epi16(_mm256_mulhi_epi16(shifted16(H0 + e + 16 * h), vb0),
                                                 _mm256_mulhi_epi16(shifted16(H1 + e + 16 * h), vb1));
            r[h] = _mm256_srai_epi16(_mm256_add_epi16(sum, two), 2);
        }
        _mm256_storeu_si256((__m256i *)(out + e), _mm256_permute4x64_epi64(_mm256_packus_epi16(r[0], r[1]), 0xD8));
    }
    return e;
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

Py_ssize_t simd_hresize_row(const uint8_t *p, const int32_t *ofs, const int32_t *alpha, const int32_t *base,
                            const uint8_t *idx, int group, int32_t *out, Py_ssize_t n)
{
    return 0;
}

int simd_use_wide(int on)
{
    (void)on;
    return 0;
}

int simd_wide(void)
{
    return 0;
}

int simd_on(void)
{
    return 0;
}

Py_ssize_t simd_vresize_row(const int32_t *H0, const int32_t *H1, Py_ssize_t n, int16_t b0, int16_t b1, uint8_t *out)
{
    return 0;
}

#endif
