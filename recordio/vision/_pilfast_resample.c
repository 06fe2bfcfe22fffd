/* Pillow 13's resampling of 8-bit bands (src/libImaging/Resample.c), for _pilfast.c: the same double
 * coefficients rounded to PRECISION_BITS fixed point, the same int32 sums and clip, so the AVX2 loops and
 * the plain ones give Pillow's bytes. Only the outputs asked for are computed. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_pilfast.h"

/* ---- Pillow's filters and coefficients (Resample.c: bilinear_filter, bicubic_filter, precompute_coeffs,
 * normalize_coeffs_8bpc), for the outputs first..first+count-1 of a resize in_size -> out_size. */

static double bilinear(double x)
{
    if (x < 0.0)
        x = -x;
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double bicubic(double x)
{
    const double a = -0.5;
    if (x < 0.0)
        x = -x;
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

int pilfast_precompute(int in_size, int out_size, int first, int count, int cubic, struct coeffs *c)
{
    double (*filter)(double) = cubic ? bicubic : bilinear;
    float in0 = 0.0f, in1 = (float)in_size;
    double scale, filterscale, support;
    filterscale = scale = (double)(in1 - in0) / out_size;
    if (filterscale < 1.0)
        filterscale = 1.0;
    support = (cubic ? 2.0 : 1.0) * filterscale;
    c->ksize = (int)ceil(support) * 2 + 1;
    c->bounds = malloc(sizeof(int) * 2 * (size_t)count);
    c->kk = malloc(sizeof(int32_t) * (size_t)c->ksize * count);
    double *k = malloc(sizeof(double) * (size_t)c->ksize);
    if (!c->bounds || !c->kk || !k) {
        free(k);
        return 0;
    }
    double inv_filterscale = 1.0 / filterscale;
    for (int i = 0; i < count; i++) {
        int xx = first + i, x, xmin, xmax;
        double center = in0 + (xx + 0.5) * scale, ww = 0.0;
        xmin = (int)(center - support + 0.5);
        if (xmin < 0)
            xmin = 0;
        xmax = (int)(center + support + 0.5);
        if (xmax > in_size)
            xmax = in_size;
        xmax -= xmin;
        for (x = 0; x < xmax; x++) {
            double w = filter((x + xmin - center + 0.5) * inv_filterscale);
            k[x] = w;
            ww += w;
        }
        if (ww != 0.0)
            for (x = 0; x < xmax; x++)
                k[x] /= ww;
        for (; x < c->ksize; x++)
            k[x] = 0;
        for (x = 0; x < c->ksize; x++)
            c->kk[i * c->ksize + x] = k[x] < 0 ? (int)(-0.5 + k[x] * (1 << PRECISION_BITS))
                                               : (int)(0.5 + k[x] * (1 << PRECISION_BITS));
        c->bounds[2 * i] = xmin;
        c->bounds[2 * i + 1] = xmax;
    }
    free(k);
    return 1;
}

static inline uint8_t clip8(int32_t s)
{
    s >>= PRECISION_BITS;
    return (uint8_t)(s < 0 ? 0 : s > 255 ? 255 : s);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2 1

/* 4 bands: two output pixels per step (lanes 0-3: pixel i, 4-7: pixel i + 1), tap by tap; wide holds their
 * coefficients, each repeated per band, zero past a pixel's taps. */
__attribute__((target("avx2"))) static void horizontal4_avx2(const struct plane *in, struct plane *out,
                                                             const struct coeffs *c, const int32_t *wide)
{
    const long ks = c->ksize, cols = out->cols, shift = out->y0 - in->y0;
    const int *restrict bounds = c->bounds;
    const __m256i half = _mm256_set1_epi32(1 << (PRECISION_BITS - 1));
    for (long y = 0; y < out->rows; y++) {
        const uint8_t *restrict row = in->px + (y + shift) * in->stride - in->x0 * 4;
        uint8_t *restrict dst = out->px + y * out->stride;
        for (long i = 0; i < cols; i += 2) {
            long j = i + 1 < cols ? i + 1 : i;
            const uint8_t *p = row + bounds[2 * i] * 4, *q = row + bounds[2 * j] * 4;
            const int32_t *k = wide + i * ks * 4;
            int n = bounds[2 * i + 1] > bounds[2 * j + 1] ? bounds[2 * i + 1] : bounds[2 * j + 1];
            __m256i acc = half;
            for (int x = 0; x < n; x++) {
                int32_t a, b;
                memcpy(&a, p + 4 * x, 4);
                memcpy(&b, q + 4 * x, 4);
                __m256i v = _mm256_cvtepu8_epi32(_mm_insert_epi32(_mm_cvtsi32_si128(a), b, 1));
                acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(v, _mm256_loadu_si256((const __m256i *)(k + 8 * x))));
            }
            acc = _mm256_srai_epi32(acc, PRECISION_BITS);
            __m128i s = _mm_packs_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
            s = _mm_packus_epi16(s, s);
            if (j > i)
                _mm_storel_epi64((__m128i *)(dst + 4 * i), s);
            else
                _mm_storeu_si32(dst + 4 * i, s);
        }
    }
}

/* Any bands: 16 bytes of the output row per step, each the sum over the taps of the rows above it. */
__attribute__((target("avx2"))) static void vertical_avx2(const struct plane *in, struct plane *out,
                                                          const struct coeffs *c)
{
    long n = out->cols * out->bands, j;
    for (long y = 0; y < out->rows; y++) {
        const uint8_t *base = in->px + (c->bounds[2 * y] - in->y0) * in->stride + (out->x0 - in->x0) * in->bands;
        const int32_t *k = c->kk + (size_t)y * c->ksize;
        uint8_t *dst = out->px + y * out->stride;
        for (j = 0; j + 16 <= n; j += 16) {
            __m256i a = _mm256_set1_epi32(1 << (PRECISION_BITS - 1)), b = a;
            for (int t = 0; t < c->bounds[2 * y + 1]; t++) {
                const uint8_t *p = base + t * in->stride + j;
                __m256i kt = _mm256_set1_epi32(k[t]);
                __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
                __m256i hi = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8)));
                a = _mm256_add_epi32(a, _mm256_mullo_epi32(lo, kt));
                b = _mm256_add_epi32(b, _mm256_mullo_epi32(hi, kt));
            }
            a = _mm256_srai_epi32(a, PRECISION_BITS);
            b = _mm256_srai_epi32(b, PRECISION_BITS);
            __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8); /* 16 int16, in order */
            __m128i u = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
            _mm_storeu_si128((__m128i *)(dst + j), u);
        }
        for (; j < n; j++) {
            int32_t s = 1 << (PRECISION_BITS - 1);
            for (int t = 0; t < c->bounds[2 * y + 1]; t++)
                s += base[t * in->stride + j] * k[t];
            dst[j] = clip8(s);
        }
    }
}
#else
#define HAVE_AVX2 0
#endif

static void horizontal_c(const struct plane *in, struct plane *out, const struct coeffs *c)
{
    int bands = in->bands, used = bands == 4 ? 3 : bands;
    for (long y = 0; y < out->rows; y++) {
        const uint8_t *row = in->px + (y + out->y0 - in->y0) * in->stride;
        uint8_t *dst = out->px + y * out->stride;
        for (long i = 0; i < out->cols; i++) {
            const uint8_t *p = row + (c->bounds[2 * i] - in->x0) * bands;
            const int32_t *k = c->kk + (size_t)i * c->ksize;
            for (int b = 0; b < used; b++) {
                int32_t s = 1 << (PRECISION_BITS - 1);
                for (int x = 0; x < c->bounds[2 * i + 1]; x++)
                    s += p[x * bands + b] * k[x];
                dst[i * bands + b] = clip8(s);
            }
        }
    }
}

static void vertical_c(const struct plane *in, struct plane *out, const struct coeffs *c)
{
    long n = out->cols * out->bands;
    for (long y = 0; y < out->rows; y++) {
        const uint8_t *base = in->px + (c->bounds[2 * y] - in->y0) * in->stride + (out->x0 - in->x0) * in->bands;
        const int32_t *k = c->kk + (size_t)y * c->ksize;
        for (long j = 0; j < n; j++) {
            int32_t s = 1 << (PRECISION_BITS - 1);
            for (int t = 0; t < c->bounds[2 * y + 1]; t++)
                s += base[t * in->stride + j] * k[t];
            out->px[y * out->stride + j] = clip8(s);
        }
    }
}

int pilfast_horizontal(const struct plane *in, struct plane *out, const struct coeffs *c, int vector)
{
#if HAVE_AVX2
    if (vector && in->bands == 4 && __builtin_cpu_supports("avx2")) {
        long ks = c->ksize; /* pixels i, i + 1 (even i): their x-th coefficients side by side */
        int32_t *wide = calloc((size_t)(out->cols + 1) * ks * 4, sizeof(int32_t));
        if (wide == NULL)
            return 0;
        for (long i = 0; i < out->cols; i++)
            for (long x = 0; x < ks; x++)
                for (int b = 0; b < 4; b++)
                    wide[((i & ~1L) * ks + 2 * x + (i & 1)) * 4 + b] = c->kk[i * ks + x];
        horizontal4_avx2(in, out, c, wide);
        free(wide);
        return 1;
    }
#endif
    (void)vector;
    horizontal_c(in, out, c);
    return 1;
}

void pilfast_vertical(const struct plane *in, struct plane *out, const struct coeffs *c, int vector)
{
#if HAVE_AVX2
    if (vector && __builtin_cpu_supports("avx2")) {
        vertical_avx2(in, out, c);
        return;
    }
#endif
    (void)vector;
    vertical_c(in, out, c);
}

