/* Compiled MindRecord integer-array compression (FORMAT.md §5.2); ints_numpy.py is the reference.
 * The compression itself, without Python objects; _codec.c has its entry points (_codec.h: the files).
 *
 * An encoded array is [u32 BE count n][ceil(n/4) bytes of 2-bit width codes][n elements, LE, signed,
 * 1/2/4/8 bytes each]. Element i's code sits in bitmap byte i/4 at bit shift 2*(3 - i%4); codes 0..3
 * mean 1, 2, 4 and 8 bytes. The encoder picks the smallest width that holds the value, as MindSpore.
 *
 * The decoder only says "valid" or "not valid": on any malformed input it returns -1 / False and the
 * Python side runs the reference decoder, which raises the error with its message. Every read is
 * bounds-checked against the part's length (counts and width sums in 64-bit arithmetic, so no count
 * can overflow them); wide loads are used only where the bytes they read remain in the buffer. The entry
 * points decode large parts without the GIL; the buffers stay held (Py_buffer) while they are.
 */
#include "_codec.h"

#include <stdlib.h>
#include <string.h>

/* For each bitmap byte (4 width codes): the sum of the 4 widths, each element's offset from the first,
 * and the shift that sign-extends a width-byte value held in the low bytes of a 64-bit load. */
static uint8_t WIDTHS4[256];
static uint64_t LAYOUT4[256];   /* byte k: offset of element k; byte 4 + k: its shift */
static uint64_t LAYOUT4_32[256]; /* the same with 32-bit shifts; 0 when an element takes 8 bytes */

static void init_tables(void)
{
    for (int b = 0; b < 256; b++) {
        int sum = 0;
        for (int k = 0; k < 4; k++) {
            int width = 1 << ((b >> (6 - 2 * k)) & 3);
            LAYOUT4[b] |= (uint64_t)sum << (8 * k) | (uint64_t)(64 - 8 * width) << (8 * (4 + k));
            sum += width;
        }
        WIDTHS4[b] = (uint8_t)sum;
        int has8 = 0;
        for (int k = 0; k < 4; k++)
            has8 |= ((b >> (6 - 2 * k)) & 3) == 3;
        LAYOUT4_32[b] = has8 ? 0 : LAYOUT4[b] - 0x2020202000000000ULL;
    }
}

static inline uint64_t load_le64(const uint8_t *p)
{
#if HOST_LE
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
#endif
}

static inline uint32_t load_le32(const uint8_t *p)
{
#if HOST_LE
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#else
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}

static inline void store_le64(uint8_t *p, uint64_t v)
{
#if HOST_LE
    memcpy(p, &v, 8);
#else
    for (int k = 0; k < 8; k++)
        p[k] = (uint8_t)(v >> (8 * k));
#endif
}

/* The signed value of `width` little-endian bytes at p; p + 8 may lie past the end when `wide` is 0. */
static inline int64_t load_elem(const uint8_t *p, int width, int wide)
{
    uint64_t v;
    if (wide) {
        v = load_le64(p);
    } else {
        v = 0;
        for (int k = width - 1; k >= 0; k--)
            v = (v << 8) | p[k];
    }
    int shift = 64 - 8 * width;
    return (int64_t)(v << shift) >> shift;
}

/* --- x86 SSSE3: 4 elements of <= 4 bytes (one bitmap byte) into 4 int32 lanes with one shuffle ------ */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && HOST_LE
#include <immintrin.h>
#define HAVE_SSSE3 1
/* For bitmap byte b with no 8-byte element: SHUFFLE4 sends element k's bytes to lane k and repeats its
 * top byte above them; OWN4 is 0xFF on the element's own bytes (the rest becomes its sign). */
static uint8_t SHUFFLE4[256][16];
static uint8_t OWN4[256][16];
static int use_ssse3, use_avx2;

static void init_simd_tables(void)
{
    for (int b = 0; b < 256; b++) {
        int off = 0;
        for (int k = 0; k < 4; k++) {
            int width = 1 << ((b >> (6 - 2 * k)) & 3);
            for (int j = 0; j < 4; j++) {
                int own = j < width && width <= 4;
                SHUFFLE4[b][4 * k + j] = (uint8_t)(own ? off + j : (width <= 4 ? off + width - 1 : 0x80));
                OWN4[b][4 * k + j] = own ? 0xFF : 0x00;
            }
            off += width;
        }
    }
    __builtin_cpu_init();
    const char *simd = getenv("RECORDIO_CODEC_SIMD");  /* "0": the portable loops; "1": SSSE3 at most (tests) */
    int most = simd != NULL && (simd[0] == '0' || simd[0] == '1') ? simd[0] - '0' : 2;
    use_ssse3 = most >= 1 && __builtin_cpu_supports("ssse3");
    use_avx2 = most >= 2 && use_ssse3 && __builtin_cpu_supports("avx2");
}

/* The SSSE3 loop (decode32_ssse3) two groups at a time: the two groups' bytes in the two 128-bit
 * lanes, one shuffle and one blend for 8 elements. Runs while 32 bytes remain (a group holds at most
 * 16). */
__attribute__((target("avx2")))
static int64_t decode32_avx2(const uint8_t *map, int64_t full, const uint8_t **pe, const uint8_t *end,
                             int32_t *out)
{
    const uint8_t *e = *pe;
    const __m256i zero = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 1 < full && end - e >= 32; i += 2) {
        unsigned b0 = map[i], b1 = map[i + 1];
        if (LAYOUT4_32[b0] == 0 || LAYOUT4_32[b1] == 0)
            break;
        const uint8_t *e1 = e + WIDTHS4[b0];
        __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)e)),
                                            _mm_loadu_si128((const __m128i *)e1), 1);
        __m256i shuffle = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)SHUFFLE4[b0])),
            _mm_loadu_si128((const __m128i *)SHUFFLE4[b1]), 1);
        __m256i own = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)OWN4[b0])),
                                              _mm_loadu_si128((const __m128i *)OWN4[b1]), 1);
        __m256i y = _mm256_shuffle_epi8(x, shuffle);
        _mm256_storeu_si256((__m256i *)(out + 4 * i), _mm256_blendv_epi8(_mm256_cmpgt_epi8(zero, y), y, own));
        e = e1 + WIDTHS4[b1];
    }
    *pe = e;
    return i;
}

/* Decode whole groups of 4 (no 8-byte element) while 16 bytes remain; returns the groups done and
 * advances *pe past their elements. */
__attribute__((target("ssse3")))
static int64_t decode32_ssse3(const uint8_t *map, int64_t full, const uint8_t **pe, const uint8_t *end,
                              int32_t *out)
{
    const uint8_t *e = *pe;
    const __m128i zero = _mm_setzero_si128();
    int64_t i = 0;
    for (; i < full && end - e >= 16; i++) {
        unsigned b = map[i];
        if (LAYOUT4_32[b] == 0)
            break;
        __m128i x = _mm_loadu_si128((const __m128i *)e);
        __m128i y = _mm_shuffle_epi8(x, _mm_loadu_si128((const __m128i *)SHUFFLE4[b]));
        __m128i own = _mm_loadu_si128((const __m128i *)OWN4[b]);
        __m128i sign = _mm_cmpgt_epi8(zero, y);
        _mm_storeu_si128((__m128i *)(out + 4 * i), _mm_or_si128(_mm_and_si128(own, y), _mm_andnot_si128(own, sign)));
        e += WIDTHS4[b];
    }
    *pe = e;
    return i;
}
#else
#define HAVE_SSSE3 0
static const int use_ssse3 = 0, use_avx2 = 0;
static void init_simd_tables(void) {}
#endif

/* --- measuring (validation) ------------------------------------------------------------------- */

/* The element count of a well-formed encoding of `len` bytes, or -1. */
int64_t codec_measure(const uint8_t *p, Py_ssize_t len)
{
    if (len < 4)
        return -1;
    uint64_t n = ((uint64_t)p[0] << 24) | ((uint64_t)p[1] << 16) | ((uint64_t)p[2] << 8) | p[3];
    uint64_t nmap = (n + 3) / 4, size = (uint64_t)len;
    if (4 + nmap + n > size)
        return -1;
    const uint8_t *map = p + 4;
    uint64_t full = n / 4, total = 4 + nmap;
    for (uint64_t j = 0; j < full; j++)
        total += WIDTHS4[map[j]];
    for (uint64_t i = full * 4; i < n; i++)
        total += (uint64_t)1 << ((map[i >> 2] >> (6 - 2 * (i & 3))) & 3);
    return total == size ? (int64_t)n : -1;
}

/* --- decoding --------------------------------------------------------------------------------- */

#define GROUP_ELEM(k) ((int64_t)(load_le64(e + (uint8_t)(lay >> (8 * (k)))) << (uint8_t)(lay >> (8 * (4 + (k))))) \
                       >> (uint8_t)(lay >> (8 * (4 + (k)))))

#define GROUP_ELEM32(k) ((int32_t)(load_le32(e + (uint8_t)(lay >> (8 * (k)))) << (uint8_t)(lay >> (8 * (4 + (k))))) \
                         >> (uint8_t)(lay >> (8 * (4 + (k)))))

/* Decode n elements (already measured, so the widths fill the part exactly) into out (itemsize 4 or
 * 8); 0, or -1 when a value does not fit an int32 output. Every load is checked against the end
 * again, so a part changed by another thread after it was measured cannot be read past. Groups of 4 elements (one bitmap byte) are
 * decoded with four 8-byte loads while 32 bytes remain; the rest element by element. */
int codec_decode_into(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize)
{
    const uint8_t *stop;
    return codec_decode_to(p, len, n, out, itemsize, &stop);
}

/* codec_decode_into, also telling where the elements ended (`*stop`): a part is well formed when its
 * elements end exactly at its end. */
int codec_decode_to(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize, const uint8_t **stop)
{
    const uint8_t *map = p + 4, *end = p + len;
    const uint8_t *e = map + (n + 3) / 4;
    int32_t *o32 = (int32_t *)out;
    int64_t *o64 = (int64_t *)out;
    int64_t i = 0, full = n / 4;
    int bad = 0;
    if (itemsize == 8) {
        for (; i < full && end - e >= 32; i++) {
            unsigned b = map[i];
            uint64_t lay = LAYOUT4[b];
            o64[4 * i] = GROUP_ELEM(0);
            o64[4 * i + 1] = GROUP_ELEM(1);
            o64[4 * i + 2] = GROUP_ELEM(2);
            o64[4 * i + 3] = GROUP_ELEM(3);
            e += WIDTHS4[b];
        }
    } else {
#if HAVE_SSSE3
        if (use_avx2)
            i = decode32_avx2(map, full, &e, end, o32);
        if (use_ssse3)
            i += decode32_ssse3(map + i, full - i, &e, end, o32 + 4 * i);
#endif
        for (; i < full && end - e >= 32; i++) {
            unsigned b = map[i];
            uint64_t lay = LAYOUT4_32[b];
            if (lay == 0)           /* an 8-byte element: decode the rest one by one, checking the range */
                break;
            o32[4 * i] = GROUP_ELEM32(0);
            o32[4 * i + 1] = GROUP_ELEM32(1);
            o32[4 * i + 2] = GROUP_ELEM32(2);
            o32[4 * i + 3] = GROUP_ELEM32(3);
            e += WIDTHS4[b];
        }
    }
    for (i *= 4; i < n; i++) {
        int width = 1 << ((map[i >> 2] >> (6 - 2 * (i & 3))) & 3);
        if (end - e < width)        /* only if the part changed since it was measured */
            return -1;
        int64_t v = load_elem(e, width, end - e >= 8);
        e += width;
        if (itemsize == 8) {
            o64[i] = v;
        } else {
            bad |= v != (int32_t)v;
            o32[i] = (int32_t)v;
        }
    }
    *stop = e;
    return bad ? -1 : 0;
}

/* --- encoding --------------------------------------------------------------------------------- */

static inline void store_le32(uint8_t *p, uint32_t v)
{
#if HOST_LE
    memcpy(p, &v, 4);
#else
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
#endif
}

static inline unsigned code32(int32_t v)
{
    return (unsigned)(v != (int8_t)v) + (unsigned)(v != (int16_t)v);
}

static inline unsigned code64(int64_t v)
{
    return (unsigned)(v != (int8_t)v) + (unsigned)(v != (int16_t)v) + (unsigned)(v != (int32_t)v);
}

/* Encode n elements into out, which has room for the widest encoding (4 + ceil(n/4) + itemsize * n
 * bytes); returns the encoding's length. Each element is stored with one itemsize-wide store (the
 * bytes past its width are overwritten by the next element), which stays inside that room. Whole
 * groups of 4 take their offsets from the bitmap byte's table, so the 4 stores do not wait on each
 * other. */
#define ENCODE_LOOP(T, CODE, STORE, U)                                                   \
    Py_ssize_t i = 0;                                                                    \
    for (; i + 4 <= n; i += 4) {                                                         \
        T v0 = in[i], v1 = in[i + 1], v2 = in[i + 2], v3 = in[i + 3];                    \
        unsigned byte = CODE(v0) << 6 | CODE(v1) << 4 | CODE(v2) << 2 | CODE(v3);        \
        uint64_t lay = LAYOUT4[byte];                                                    \
        STORE(e, (U)v0);                                                                 \
        STORE(e + (uint8_t)(lay >> 8), (U)v1);                                           \
        STORE(e + (uint8_t)(lay >> 16), (U)v2);                                          \
        STORE(e + (uint8_t)(lay >> 24), (U)v3);                                          \
        map[i >> 2] = (uint8_t)byte;                                                     \
        e += WIDTHS4[byte];                                                              \
    }                                                                                    \
    if (i < n) {                                                                         \
        unsigned byte = 0;                                                               \
        for (Py_ssize_t k = 0; k < 4; k++) {                                             \
            unsigned code = 0;                                                           \
            if (i + k < n) {                                                             \
                code = CODE(in[i + k]);                                                  \
                STORE(e, (U)in[i + k]);                                                  \
                e += 1 << code;                                                          \
            }                                                                            \
            byte = byte << 2 | code;                                                     \
        }                                                                                \
        map[i >> 2] = (uint8_t)byte;                                                     \
    }

Py_ssize_t codec_encode_into(const void *values, int itemsize, Py_ssize_t n, uint8_t *out)
{
    uint8_t *map = out + 4, *e = map + (n + 3) / 4;
    out[0] = (uint8_t)(n >> 24);
    out[1] = (uint8_t)(n >> 16);
    out[2] = (uint8_t)(n >> 8);
    out[3] = (uint8_t)n;
    if (itemsize == 4) {
        const int32_t *in = (const int32_t *)values;
        ENCODE_LOOP(int32_t, code32, store_le32, uint32_t)
    } else {
        const int64_t *in = (const int64_t *)values;
        ENCODE_LOOP(int64_t, code64, store_le64, uint64_t)
    }
    return e - out;
}

/* The tables and the SIMD choice, once at import. */
void codec_init(void)
{
    init_tables();
    init_simd_tables();
}

/* 2: the AVX2 loop runs, 1: SSSE3, 0: neither. */
int codec_simd(void)
{
    return use_avx2 ? 2 : use_ssse3;
}
