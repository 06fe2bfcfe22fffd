/* Compiled MindRecord integer-array compression (FORMAT.md §5.2); ints_numpy.py is the reference.
 *
 * An encoded array is [u32 BE count n][ceil(n/4) bytes of 2-bit width codes][n elements, LE, signed,
 * 1/2/4/8 bytes each]. Element i's code sits in bitmap byte i/4 at bit shift 2*(3 - i%4); codes 0..3
 * mean 1, 2, 4 and 8 bytes. The encoder picks the smallest width that holds the value, as MindSpore.
 *
 * The decoder only says "valid" or "not valid": on any malformed input it returns -1 / False and the
 * Python side runs the reference decoder, which raises the error with its message. Every read is
 * bounds-checked against the part's length (counts and width sums in 64-bit arithmetic, so no count
 * can overflow them); wide loads are used only where the bytes they read remain in the buffer. Large
 * parts are decoded without the GIL; the buffers stay held (Py_buffer) while they are.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || defined(_WIN32)
#define HOST_LE 1
#else
#define HOST_LE 0
#endif

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
static int64_t measure(const uint8_t *p, Py_ssize_t len)
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

static int decode_to(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize, const uint8_t **stop);

/* Decode n elements (already measured, so the widths fill the part exactly) into out (itemsize 4 or
 * 8); 0, or -1 when a value does not fit an int32 output. Every load is checked against the end
 * again, so a part changed by another thread after it was measured cannot be read past. Groups of 4 elements (one bitmap byte) are
 * decoded with four 8-byte loads while 32 bytes remain; the rest element by element. */
static int decode_into(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize)
{
    const uint8_t *stop;
    return decode_to(p, len, n, out, itemsize, &stop);
}

/* decode_into, also telling where the elements ended (`*stop`): a part is well formed when its
 * elements end exactly at its end. */
static int decode_to(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize, const uint8_t **stop)
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

static Py_ssize_t encode_into(const void *values, int itemsize, Py_ssize_t n, uint8_t *out)
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

/* A part of a few thousand elements decodes in about a microsecond: less than handing the GIL to
 * another thread and waiting to get it back, so only large parts release it. */
#define RELEASE_GIL_FROM (1 << 18)

static int decode_unlocked(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize)
{
    int ok;
    if (n < RELEASE_GIL_FROM)
        return decode_into(p, len, n, out, itemsize) == 0;
    Py_BEGIN_ALLOW_THREADS
    ok = decode_into(p, len, n, out, itemsize) == 0;
    Py_END_ALLOW_THREADS
    return ok;
}

/* --- Python glue ------------------------------------------------------------------------------ */

static int get_ints(PyObject *obj, Py_buffer *view, int writable)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int ok = (view->itemsize == 4 || view->itemsize == 8) && f[0] != '\0' && f[1] == '\0' &&
             (f[0] == 'i' || f[0] == 'l' || f[0] == 'q') &&
             !(view->format != NULL && view->format[0] == '<' && !HOST_LE);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "expected a contiguous native int32 or int64 buffer, found format "
                     "'%s' of %zd-byte items", view->format ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *py_measure(PyObject *self, PyObject *arg)
{
    Py_buffer data;
    if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0)
        return NULL;
    int64_t n = measure((const uint8_t *)data.buf, data.len);
    PyBuffer_Release(&data);
    return PyLong_FromLongLong(n);
}

static PyObject *py_measure_many(PyObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "measure_many expects a sequence of bytes-like parts");
    if (seq == NULL)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(count);
    for (Py_ssize_t i = 0; out != NULL && i < count; i++) {
        PyObject *n = py_measure(self, PySequence_Fast_GET_ITEM(seq, i));
        if (n == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, n);
    }
    Py_DECREF(seq);
    return out;
}

/* decode_into(part, out) -> bool: out (int32/int64, exactly the part's count) filled; False when the
 * part is malformed or a value does not fit out. */
static PyObject *py_decode_into(PyObject *self, PyObject *args)
{
    PyObject *part, *target;
    if (!PyArg_ParseTuple(args, "OO:decode_into", &part, &target))
        return NULL;
    Py_buffer data, out;
    if (PyObject_GetBuffer(part, &data, PyBUF_SIMPLE) < 0)
        return NULL;
    if (get_ints(target, &out, 1) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    int64_t n = measure((const uint8_t *)data.buf, data.len);
    int ok = n >= 0 && n * out.itemsize == out.len;
    if (ok) {
        ok = decode_unlocked((const uint8_t *)data.buf, data.len, n, out.buf, (int)out.itemsize);
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&data);
    return PyBool_FromLong(ok);
}

/* decode_many(parts, out) -> int: the parts decoded one after another into out (their counts summing
 * to out's length); -1 when all went well, else the index of the first part that did not. */
static PyObject *py_decode_many(PyObject *self, PyObject *args)
{
    PyObject *parts, *target;
    if (!PyArg_ParseTuple(args, "OO:decode_many", &parts, &target))
        return NULL;
    PyObject *seq = PySequence_Fast(parts, "decode_many expects a sequence of bytes-like parts");
    if (seq == NULL)
        return NULL;
    Py_buffer out;
    if (get_ints(target, &out, 1) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq), bad = -1, at = 0, room = out.len / out.itemsize;
    for (Py_ssize_t i = 0; i < count && bad < 0; i++) {
        Py_buffer data;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &data, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&out);
            Py_DECREF(seq);
            return NULL;
        }
        int64_t n = measure((const uint8_t *)data.buf, data.len);
        int ok = n >= 0 && n <= room - at;
        if (ok) {
            char *dst = (char *)out.buf + at * out.itemsize;
            ok = decode_unlocked((const uint8_t *)data.buf, data.len, n, dst, (int)out.itemsize);
            at += (Py_ssize_t)n;
        }
        PyBuffer_Release(&data);
        if (!ok)
            bad = i;
    }
    if (bad < 0 && at != room)
        bad = count;
    PyBuffer_Release(&out);
    Py_DECREF(seq);
    return PyLong_FromSsize_t(bad);
}

static PyObject *encode_view(Py_buffer *in)
{
    Py_ssize_t n = in->len / in->itemsize;
    if (n > (Py_ssize_t)0xFFFFFFFF) {
        PyErr_Format(PyExc_OverflowError, "an integer array of %zd elements does not fit a u32 count", n);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 + (n + 3) / 4 + in->itemsize * n);
    if (out == NULL)
        return NULL;
    Py_ssize_t size = encode_into(in->buf, (int)in->itemsize, n, (uint8_t *)PyBytes_AS_STRING(out));
    if (_PyBytes_Resize(&out, size) < 0)
        return NULL;
    return out;
}

/* encode(values) -> bytes: a contiguous native int32/int64 buffer, encoded. */
static PyObject *py_encode(PyObject *self, PyObject *arg)
{
    Py_buffer in;
    if (get_ints(arg, &in, 0) < 0)
        return NULL;
    PyObject *out = encode_view(&in);
    PyBuffer_Release(&in);
    return out;
}

/* encode_rows(values, rows) -> list of bytes: a contiguous (rows, L) buffer, one encoding per row. */
static PyObject *py_encode_rows(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t rows;
    if (!PyArg_ParseTuple(args, "On:encode_rows", &obj, &rows))
        return NULL;
    Py_buffer in;
    if (get_ints(obj, &in, 0) < 0)
        return NULL;
    Py_ssize_t items = in.len / in.itemsize;
    if (rows < 0 || (rows == 0 ? items != 0 : items % rows != 0)) {
        PyErr_Format(PyExc_ValueError, "%zd elements do not split into %zd equal rows", items, rows);
        PyBuffer_Release(&in);
        return NULL;
    }
    PyObject *list = PyList_New(rows);
    Py_ssize_t width = rows ? items / rows : 0;
    for (Py_ssize_t r = 0; list != NULL && r < rows; r++) {
        Py_buffer row = in;
        row.buf = (char *)in.buf + r * width * in.itemsize;
        row.len = width * in.itemsize;
        PyObject *one = encode_view(&row);
        if (one == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, r, one);
    }
    PyBuffer_Release(&in);
    return list;
}

/* The ranges [starts[i], ends[i]) of a buffer, given as two int64 arrays of one length. */
typedef struct {
    Py_buffer data, starts, ends;
    Py_ssize_t count;
} Ranges;

static void release_ranges(Ranges *r)
{
    PyBuffer_Release(&r->ends);
    PyBuffer_Release(&r->starts);
    PyBuffer_Release(&r->data);
}

static int get_ranges(PyObject *data, PyObject *starts, PyObject *ends, Ranges *r)
{
    if (PyObject_GetBuffer(data, &r->data, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(starts, &r->starts, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&r->data);
        return -1;
    }
    if (PyObject_GetBuffer(ends, &r->ends, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&r->starts);
        PyBuffer_Release(&r->data);
        return -1;
    }
    r->count = r->starts.len / 8;
    if (r->starts.itemsize != 8 || r->ends.itemsize != 8 || r->ends.len != r->starts.len) {
        PyErr_SetString(PyExc_TypeError, "starts and ends must be int64 arrays of one length");
        release_ranges(r);
        return -1;
    }
    const int64_t *a = (const int64_t *)r->starts.buf, *b = (const int64_t *)r->ends.buf;
    for (Py_ssize_t i = 0; i < r->count; i++) {
        if (a[i] < 0 || b[i] < a[i] || b[i] > r->data.len) {
            PyErr_Format(PyExc_ValueError, "range %zd [%lld, %lld) is outside the %zd-byte buffer", i,
                         (long long)a[i], (long long)b[i], r->data.len);
            release_ranges(r);
            return -1;
        }
    }
    return 0;
}

/* The element count a part's header declares, or -1 when the part is too short to hold that many
 * (a count the part cannot hold is never allocated). */
static int64_t header_count(const uint8_t *p, int64_t len)
{
    if (len < 4)
        return -1;
    int64_t n = (int64_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
    return 4 + (n + 3) / 4 + n <= len ? n : -1;
}

/* The (data, starts, ends, out) arguments of a *_ranges call: the ranges checked and `out` taken
 * (native int32/int64 when `ints`, else any writable contiguous buffer); -1 with an error set. */
static int ranges_args(PyObject *args, const char *format, Ranges *r, Py_buffer *out, int ints)
{
    PyObject *data, *starts, *ends, *target;
    if (!PyArg_ParseTuple(args, format, &data, &starts, &ends, &target))
        return -1;
    if (get_ranges(data, starts, ends, r) < 0)
        return -1;
    int got = ints ? get_ints(target, out, 1)
                   : PyObject_GetBuffer(target, out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE);
    if (got < 0) {
        release_ranges(r);
        return -1;
    }
    return 0;
}

/* measure_ranges(data, starts, ends, counts): counts[i] (int64) = the element count the header of
 * part i declares, -1 when the part is too short to hold them (decode_ranges checks the rest). */
static PyObject *py_measure_ranges(PyObject *self, PyObject *args)
{
    Ranges r;
    Py_buffer out;
    if (ranges_args(args, "OOOO:measure_ranges", &r, &out, 0) < 0)
        return NULL;
    if (out.len != r.count * 8) {
        PyErr_SetString(PyExc_ValueError, "counts must be an int64 array with one item a range");
        PyBuffer_Release(&out);
        release_ranges(&r);
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)r.data.buf;
    const int64_t *a = (const int64_t *)r.starts.buf, *b = (const int64_t *)r.ends.buf;
    int64_t *counts = (int64_t *)out.buf;
    for (Py_ssize_t i = 0; i < r.count; i++)
        counts[i] = header_count(base + a[i], b[i] - a[i]);
    PyBuffer_Release(&out);
    release_ranges(&r);
    Py_RETURN_NONE;
}

/* decode_ranges(data, starts, ends, out) -> int: the parts decoded one after another into out (their
 * counts summing to out's length); -1 when all went well, else the index of the first that did not. */
static PyObject *py_decode_ranges(PyObject *self, PyObject *args)
{
    Ranges r;
    Py_buffer out;
    if (ranges_args(args, "OOOO:decode_ranges", &r, &out, 1) < 0)
        return NULL;
    const uint8_t *base = (const uint8_t *)r.data.buf;
    const int64_t *a = (const int64_t *)r.starts.buf, *b = (const int64_t *)r.ends.buf;
    Py_ssize_t bad = -1, at = 0, room = out.len / out.itemsize;
    int itemsize = (int)out.itemsize;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < r.count && bad < 0; i++) {      /* measure's checks, in one pass */
        const uint8_t *p = base + a[i], *stop = NULL;
        Py_ssize_t len = (Py_ssize_t)(b[i] - a[i]);
        int64_t n = header_count(p, len);
        if (n < 0 || n > room - at ||
                decode_to(p, len, n, (char *)out.buf + at * itemsize, itemsize, &stop) != 0 || stop != p + len)
            bad = i;
        else
            at += (Py_ssize_t)n;
    }
    Py_END_ALLOW_THREADS
    if (bad < 0 && at != room)
        bad = r.count;
    PyBuffer_Release(&out);
    release_ranges(&r);
    return PyLong_FromSsize_t(bad);
}

/* Whether out holds exactly the ranges, each with `prefix` bytes before it; else -1 with a ValueError
 * naming `what`, out and the ranges released. */
static int check_room(Ranges *r, Py_buffer *out, int64_t prefix, const char *what)
{
    const int64_t *a = (const int64_t *)r->starts.buf, *b = (const int64_t *)r->ends.buf;
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < r->count; i++)
        total += prefix + b[i] - a[i];
    if (total == out->len)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s hold %lld bytes, out has %zd", what, (long long)total, out->len);
    PyBuffer_Release(out);
    release_ranges(r);
    return -1;
}

/* copy_ranges(data, starts, ends, out): the ranges copied one after another into out (a writable
 * buffer of exactly their total length). */
static PyObject *py_copy_ranges(PyObject *self, PyObject *args)
{
    Ranges r;
    Py_buffer out;
    if (ranges_args(args, "OOOO:copy_ranges", &r, &out, 0) < 0)
        return NULL;
    if (check_room(&r, &out, 0, "copy_ranges: the ranges") < 0)
        return NULL;
    const uint8_t *base = (const uint8_t *)r.data.buf;
    const int64_t *a = (const int64_t *)r.starts.buf, *b = (const int64_t *)r.ends.buf;
    uint8_t *dst = (uint8_t *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < r.count; i++) {
        memcpy(dst, base + a[i], (size_t)(b[i] - a[i]));
        dst += b[i] - a[i];
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    release_ranges(&r);
    Py_RETURN_NONE;
}

/* copy_entries(data, starts, ends, out): each range as a page entry, [u64 LE length][bytes], one after
 * another into out (a writable buffer of exactly their total length plus 8 bytes a range). */
static PyObject *py_copy_entries(PyObject *self, PyObject *args)
{
    Ranges r;
    Py_buffer out;
    if (ranges_args(args, "OOOO:copy_entries", &r, &out, 0) < 0)
        return NULL;
    if (check_room(&r, &out, 8, "copy_entries: the entries") < 0)
        return NULL;
    const uint8_t *base = (const uint8_t *)r.data.buf;
    const int64_t *a = (const int64_t *)r.starts.buf, *b = (const int64_t *)r.ends.buf;
    uint8_t *dst = (uint8_t *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < r.count; i++) {
        uint64_t n = (uint64_t)(b[i] - a[i]);
        for (int k = 0; k < 8; k++)
            dst[k] = (uint8_t)(n >> (8 * k));
        memcpy(dst + 8, base + a[i], (size_t)n);
        dst += 8 + n;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    release_ranges(&r);
    Py_RETURN_NONE;
}

/* --- raw records: msgpack maps of scalar fields, read into columns (FORMAT.md §4) -----------------------
 *
 * A raw record is a msgpack map of the schema's raw fields (ints, floats, strings). decode_records reads
 * a batch of them straight into columns; anything it does not expect (a record that is not a map of
 * exactly the schema's fields, each once; a value of another type; an int outside int64; a string that
 * is not strict UTF-8; a record that does not end where its range ends) makes it give up on the batch,
 * and the Python side decodes it with msgpack (the reference, whose errors name file, row and field). */

typedef struct {
    const uint8_t *p, *end;
} Cursor;

/* n big-endian bytes as an unsigned value; -1 when fewer remain. */
static int take_be(Cursor *c, int n, uint64_t *v)
{
    if (c->end - c->p < n)
        return -1;
    uint64_t x = 0;
    for (int k = 0; k < n; k++)
        x = x << 8 | c->p[k];
    c->p += n;
    *v = x;
    return 0;
}

/* A str header: its byte length (the bytes remain), -1 when the value is not a str that fits. */
static int64_t take_str(Cursor *c)
{
    if (c->p >= c->end)
        return -1;
    uint8_t t = *c->p++;
    uint64_t n;
    if ((t & 0xe0) == 0xa0)
        n = t & 0x1f;
    else if (t < 0xd9 || t > 0xdb || take_be(c, 1 << (t - 0xd9), &n) < 0)
        return -1;
    return (uint64_t)(c->end - c->p) < n ? -1 : (int64_t)n;
}

/* An int value (any msgpack int format) as int64; -1 when the value is not an int or exceeds int64. */
static int take_int(Cursor *c, int64_t *v)
{
    if (c->p >= c->end)
        return -1;
    uint8_t t = *c->p++;
    uint64_t u;
    if (t <= 0x7f || t >= 0xe0) {
        *v = (int8_t)t;
        return 0;
    }
    if (t >= 0xcc && t <= 0xcf) {                 /* uint 8/16/32/64 */
        if (take_be(c, 1 << (t - 0xcc), &u) < 0 || u > (uint64_t)INT64_MAX)
            return -1;
        *v = (int64_t)u;
        return 0;
    }
    if (t >= 0xd0 && t <= 0xd3) {                 /* int 8/16/32/64 */
        int n = 1 << (t - 0xd0);
        if (take_be(c, n, &u) < 0)
            return -1;
        *v = n == 8 ? (int64_t)u : (int64_t)(u << (64 - 8 * n)) >> (64 - 8 * n);
        return 0;
    }
    c->p--;
    return -1;
}

/* A float value as double: float32/float64, or an int that a double holds exactly. */
static int take_float(Cursor *c, double *v)
{
    if (c->p >= c->end)
        return -1;
    uint8_t t = *c->p;
    uint64_t u;
    if (t == 0xca || t == 0xcb) {
        c->p++;
        if (take_be(c, t == 0xca ? 4 : 8, &u) < 0)
            return -1;
        if (t == 0xca) {
            uint32_t w = (uint32_t)u;
            float f;
            memcpy(&f, &w, 4);
            *v = f;
        } else {
            memcpy(v, &u, 8);
        }
        return 0;
    }
    int64_t i;
    if (take_int(c, &i) < 0 || i > ((int64_t)1 << 53) || i < -((int64_t)1 << 53))
        return -1;
    *v = (double)i;
    return 0;
}

/* Step over a scalar value (nil, bool, int, float, bin, strict-UTF-8 str) of a field not asked for;
 * -1 for anything else (containers and extension types go to the reference decoder). */
static int skip_scalar(Cursor *c)
{
    static const uint8_t fixed[] = {1, 2, 4, 8, 1, 2, 4, 8};     /* payloads of 0xcc..0xd3 */
    if (c->p >= c->end)
        return -1;
    uint8_t t = *c->p++;
    uint64_t n = 0;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3)
        return 0;
    if (t == 0xca || t == 0xcb)
        n = t == 0xca ? 4 : 8;
    else if (t >= 0xcc && t <= 0xd3)
        n = fixed[t - 0xcc];
    else if (t >= 0xc4 && t <= 0xc6) {            /* bin 8/16/32 */
        if (take_be(c, 1 << (t - 0xc4), &n) < 0)
            return -1;
    } else {
        c->p--;
        int64_t len = take_str(c);
        if (len < 0)
            return -1;
        PyObject *s = PyUnicode_DecodeUTF8((const char *)c->p, (Py_ssize_t)len, NULL);
        if (s == NULL) {
            PyErr_Clear();
            return -1;
        }
        Py_DECREF(s);
        n = (uint64_t)len;
    }
    if ((uint64_t)(c->end - c->p) < n)
        return -1;
    c->p += n;
    return 0;
}

#define MAX_RAW_FIELDS 64

/* One record into row `row` of the columns; 0, or -1 when it is not what the fast path reads. */
static int read_record(Cursor *c, Py_ssize_t nkeys, const char **names, const Py_ssize_t *lens,
                       const char *kinds, void **cols, Py_ssize_t row)
{
    uint8_t seen[MAX_RAW_FIELDS] = {0};
    uint64_t count;
    if (c->p >= c->end)
        return -1;
    uint8_t t = *c->p++;
    if ((t & 0xf0) == 0x80)
        count = t & 0x0f;
    else if ((t != 0xde && t != 0xdf) || take_be(c, t == 0xde ? 2 : 4, &count) < 0)
        return -1;
    if (count != (uint64_t)nkeys)
        return -1;
    for (uint64_t e = 0; e < count; e++) {
        int64_t len = take_str(c);
        if (len < 0)
            return -1;
        Py_ssize_t k = 0;
        while (k < nkeys && (lens[k] != len || memcmp(names[k], c->p, (size_t)len) != 0))
            k++;
        if (k == nkeys || seen[k])
            return -1;
        seen[k] = 1;
        c->p += len;
        switch (kinds[k]) {
        case 'i':
            if (take_int(c, (int64_t *)cols[k] + row) < 0)
                return -1;
            break;
        case 'f':
            if (take_float(c, (double *)cols[k] + row) < 0)
                return -1;
            break;
        case 's': {
            int64_t n = take_str(c);
            if (n < 0)
                return -1;
            PyObject *s = PyUnicode_DecodeUTF8((const char *)c->p, (Py_ssize_t)n, NULL);
            if (s == NULL) {
                PyErr_Clear();
                return -1;
            }
            PyList_SetItem((PyObject *)cols[k], row, s);     /* releases the None */
            c->p += n;
            break;
        }
        default:
            if (skip_scalar(c) < 0)
                return -1;
        }
    }
    return 0;
}

/* decode_records(data, starts, ends, names, kinds, outs) -> int: record i is data[starts[i]:ends[i]], a
 * msgpack map whose keys are exactly `names` (a tuple of UTF-8 bytes); kinds[k] says what field k's
 * value becomes in outs[k]: 'i' an int64 array, 'f' a float64 array (one item a record), 's' a list
 * of n None (each replaced by the str), '-' nothing (its value is stepped over). -1 when every record
 * was read, else the index of the first that was not (the columns are then partly written). */
static PyObject *py_decode_records(PyObject *self, PyObject *args)
{
    PyObject *data, *starts, *ends, *names, *outs;
    const char *kinds;
    Py_ssize_t nkinds;
    if (!PyArg_ParseTuple(args, "OOOO!y#O!:decode_records", &data, &starts, &ends, &PyTuple_Type, &names,
                          &kinds, &nkinds, &PyTuple_Type, &outs))
        return NULL;
    Py_ssize_t nkeys = PyTuple_GET_SIZE(names);
    if (nkeys > MAX_RAW_FIELDS || nkinds != nkeys || PyTuple_GET_SIZE(outs) != nkeys) {
        PyErr_Format(PyExc_ValueError, "decode_records: %zd names, %zd kinds and %zd outs (at most %d)",
                     nkeys, nkinds, PyTuple_GET_SIZE(outs), MAX_RAW_FIELDS);
        return NULL;
    }
    Ranges r;
    if (get_ranges(data, starts, ends, &r) < 0)
        return NULL;
    const char *key[MAX_RAW_FIELDS];
    Py_ssize_t keylen[MAX_RAW_FIELDS];
    void *col[MAX_RAW_FIELDS];
    Py_buffer held[MAX_RAW_FIELDS];
    int nheld = 0, ok = 1;
    for (Py_ssize_t k = 0; k < nkeys && ok; k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k), *out = PyTuple_GET_ITEM(outs, k);
        col[k] = NULL;
        if (!PyBytes_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "decode_records: names must be bytes");
            ok = 0;
        } else if (kinds[k] == 'i' || kinds[k] == 'f') {
            if (PyObject_GetBuffer(out, &held[nheld], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
                ok = 0;
            } else {
                col[k] = held[nheld].buf;
                if (held[nheld++].len != r.count * 8) {
                    PyErr_SetString(PyExc_ValueError, "decode_records: a numeric out needs 8 bytes a record");
                    ok = 0;
                }
            }
        } else if (kinds[k] == 's') {
            if (!PyList_CheckExact(out) || PyList_GET_SIZE(out) != r.count) {
                PyErr_SetString(PyExc_ValueError, "decode_records: a str out must be a list of one item a record");
                ok = 0;
            }
            col[k] = out;
        } else if (kinds[k] != '-') {
            PyErr_Format(PyExc_ValueError, "decode_records: unknown kind %c", kinds[k]);
            ok = 0;
        }
        if (ok) {
            key[k] = PyBytes_AS_STRING(name);
            keylen[k] = PyBytes_GET_SIZE(name);
        }
    }
    Py_ssize_t bad = -1;
    if (ok) {
        const uint8_t *base = (const uint8_t *)r.data.buf;
        const int64_t *a = (const int64_t *)r.starts.buf, *b = (const int64_t *)r.ends.buf;
        for (Py_ssize_t i = 0; i < r.count && bad < 0; i++) {
            Cursor c = {base + a[i], base + b[i]};
            if (read_record(&c, nkeys, key, keylen, kinds, col, i) < 0 || c.p != c.end)
                bad = i;
        }
    }
    for (int h = 0; h < nheld; h++)
        PyBuffer_Release(&held[h]);
    release_ranges(&r);
    return ok ? PyLong_FromSsize_t(bad) : NULL;
}

/* --- the keyed Feistel permutation of recordio/dataset/permutation.py (its numpy code is the reference) --- */

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

#define MAX_ROUNDS 16

/* permute(positions, out, n, half, keys): out[i] = the permutation's row at positions[i] (int64 arrays
 * of one length, positions in [0, n) and n <= 4^half): a balanced Feistel network of len(keys) rounds
 * over 2 * half bits, cycle-walked back into [0, n). */
static PyObject *py_permute(PyObject *self, PyObject *args)
{
    PyObject *pos_obj, *out_obj, *keys_obj;
    unsigned long long n;
    int half;
    if (!PyArg_ParseTuple(args, "OOKiO!:permute", &pos_obj, &out_obj, &n, &half, &PyTuple_Type, &keys_obj))
        return NULL;
    Py_ssize_t rounds = PyTuple_GET_SIZE(keys_obj);
    if (half < 1 || half > 32 || rounds > MAX_ROUNDS || (half < 32 && n > (1ULL << (2 * half)))) {
        PyErr_Format(PyExc_ValueError, "permute: half %d, %zd rounds and n %llu do not fit", half, rounds, n);
        return NULL;
    }
    uint64_t keys[MAX_ROUNDS];
    for (Py_ssize_t r = 0; r < rounds; r++) {
        keys[r] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(keys_obj, r));
        if (keys[r] == (uint64_t)-1 && PyErr_Occurred())
            return NULL;
    }
    Py_buffer pos, out;
    if (get_ints(pos_obj, &pos, 0) < 0)
        return NULL;
    if (get_ints(out_obj, &out, 1) < 0) {
        PyBuffer_Release(&pos);
        return NULL;
    }
    if (pos.itemsize != 8 || out.itemsize != 8 || pos.len != out.len) {
        PyErr_SetString(PyExc_TypeError, "permute: positions and out must be int64 arrays of one length");
        PyBuffer_Release(&out);
        PyBuffer_Release(&pos);
        return NULL;
    }
    const int64_t *x = (const int64_t *)pos.buf;
    int64_t *y = (int64_t *)out.buf;
    Py_ssize_t count = pos.len / 8, bad = -1;
    int64_t bad_value = 0;
    uint64_t mask = (1ULL << half) - 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        if (x[i] < 0 || (uint64_t)x[i] >= n) {
            bad = i;
            bad_value = x[i];
            break;
        }
        uint64_t v = (uint64_t)x[i];
        do {                                   /* cycle walking: the domain is below 4 n */
            uint64_t left = v >> half, right = v & mask;
            for (Py_ssize_t r = 0; r < rounds; r++) {
                uint64_t next = left ^ (mix64(right ^ keys[r]) & mask);
                left = right;
                right = next;
            }
            v = left << half | right;
        } while (v >= n);
        y[i] = (int64_t)v;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    PyBuffer_Release(&pos);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "permute: position %lld is outside [0, %llu)", (long long)bad_value, n);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* walk_entries(data, start, count, limit, out) -> int: the positions of `count` consecutive
 * [u64 LE n][n bytes] entries from byte `start` of data (a page's entries, FORMAT.md section 4):
 * out (int64, count + 1 items) gets each entry's prefix position and, last, the end of the last one.
 * -1 when every entry lies inside [start, limit), else the index of the first that does not (out is
 * filled up to it). limit must not pass the buffer's end. */
static PyObject *py_walk_entries(PyObject *self, PyObject *args)
{
    PyObject *data, *target;
    long long start, count, limit;
    Py_buffer in, out;
    if (!PyArg_ParseTuple(args, "OLLLO:walk_entries", &data, &start, &count, &limit, &target))
        return NULL;
    if (PyObject_GetBuffer(data, &in, PyBUF_SIMPLE) < 0)
        return NULL;
    if (get_ints(target, &out, 1) < 0) {
        PyBuffer_Release(&in);
        return NULL;
    }
    if (out.itemsize != 8 || count < 0 || out.len / 8 != count + 1 || start < 0 || limit < start ||
            limit > (long long)in.len) {
        PyErr_Format(PyExc_ValueError, "walk_entries: %lld entries from byte %lld to %lld of a %zd-byte "
                     "buffer into %zd int64 items", count, start, limit, in.len, out.len / out.itemsize);
        PyBuffer_Release(&out);
        PyBuffer_Release(&in);
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)in.buf;
    int64_t *pos = (int64_t *)out.buf;
    uint64_t at = (uint64_t)start, stop = (uint64_t)limit;
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (long long i = 0; i < count; i++) {
        pos[i] = (int64_t)at;
        if (stop - at < 8) {
            bad = (Py_ssize_t)i;
            break;
        }
        uint64_t n;
        memcpy(&n, base + at, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        n = __builtin_bswap64(n);
#endif
        if (n > stop - at - 8) {
            bad = (Py_ssize_t)i;
            break;
        }
        at += 8 + n;
    }
    if (bad < 0)
        pos[count] = (int64_t)at;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    PyBuffer_Release(&in);
    return PyLong_FromSsize_t(bad);
}

static PyMethodDef methods[] = {
    {"measure", py_measure, METH_O,
     "measure(part) -> int: the element count of a well-formed encoding, else -1."},
    {"measure_many", py_measure_many, METH_O,
     "measure_many(parts) -> list[int]: measure() of each part."},
    {"decode_into", py_decode_into, METH_VARARGS,
     "decode_into(part, out) -> bool: decode into out (int32/int64 buffer of exactly the part's count); "
     "False when malformed or a value does not fit."},
    {"measure_ranges", py_measure_ranges, METH_VARARGS,
     "measure_ranges(data, starts, ends, counts): each range's element count (-1: malformed)"},
    {"decode_ranges", py_decode_ranges, METH_VARARGS,
     "decode_ranges(data, starts, ends, out) -> -1, or the index of the first part that failed"},
    {"walk_entries", py_walk_entries, METH_VARARGS,
     "walk_entries(data, start, count, limit, out) -> -1, or the index of the first entry that does not "
     "fit before limit (out: each entry's prefix position, then the end)"},
    {"copy_ranges", py_copy_ranges, METH_VARARGS,
     "copy_ranges(data, starts, ends, out): the ranges one after another into out"},
    {"copy_entries", py_copy_entries, METH_VARARGS,
     "copy_entries(data, starts, ends, out): each range as a page entry ([u64 LE length][bytes]) into out"},
    {"decode_records", py_decode_records, METH_VARARGS,
     "decode_records(data, starts, ends, names, kinds, outs) -> -1, or the index of the first record "
     "not read (msgpack maps of scalar fields into columns)"},
    {"permute", py_permute, METH_VARARGS,
     "permute(positions, out, n, half, keys): the keyed Feistel permutation of [0, n) at positions"},
    {"decode_many", py_decode_many, METH_VARARGS,
     "decode_many(parts, out) -> int: decode the parts one after another into out; -1 when all fit "
     "exactly, else the index of the first that did not (len(parts) when out was not filled)."},
    {"encode", py_encode, METH_O,
     "encode(values) -> bytes: encode a contiguous native int32/int64 buffer."},
    {"encode_rows", py_encode_rows, METH_VARARGS,
     "encode_rows(values, rows) -> list[bytes]: encode each of the equal rows of a contiguous buffer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_codec", NULL, -1, methods};

PyMODINIT_FUNC PyInit__codec(void)
{
    init_tables();
    init_simd_tables();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "SIMD", use_avx2 ? 2 : use_ssse3) < 0)
        Py_CLEAR(m);
    return m;
}
