/* Ranges [starts[i], ends[i]) of one buffer (a page, a blob file's bytes): their compressed integer
 * parts measured and decoded one after another into one array, their bytes copied out as they are or
 * as page entries ([u64 LE length][bytes]), and a page's entries walked (FORMAT.md section 4).
 * _codec.h lists the other files of the module.
 */
#include "_codec.h"

#include <string.h>

void codec_release_ranges(Ranges *r)
{
    PyBuffer_Release(&r->ends);
    PyBuffer_Release(&r->starts);
    PyBuffer_Release(&r->data);
}

int codec_get_ranges(PyObject *data, PyObject *starts, PyObject *ends, Ranges *r)
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
        codec_release_ranges(r);
        return -1;
    }
    const int64_t *a = (const int64_t *)r->starts.buf, *b = (const int64_t *)r->ends.buf;
    for (Py_ssize_t i = 0; i < r->count; i++) {
        if (a[i] < 0 || b[i] < a[i] || b[i] > r->data.len) {
            PyErr_Format(PyExc_ValueError, "range %zd [%lld, %lld) is outside the %zd-byte buffer", i,
                         (long long)a[i], (long long)b[i], r->data.len);
            codec_release_ranges(r);
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
    if (codec_get_ranges(data, starts, ends, r) < 0)
        return -1;
    int got = ints ? codec_get_ints(target, out, 1)
                   : PyObject_GetBuffer(target, out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE);
    if (got < 0) {
        codec_release_ranges(r);
        return -1;
    }
    return 0;
}

/* measure_ranges(data, starts, ends, counts): counts[i] (int64) = the element count the header of
 * part i declares, -1 when the part is too short to hold them (decode_ranges checks the rest). */
PyObject *codec_py_measure_ranges(PyObject *self, PyObject *args)
{
    Ranges r;
    Py_buffer out;
    if (ranges_args(args, "OOOO:measure_ranges", &r, &out, 0) < 0)
        return NULL;
    if (out.len != r.count * 8) {
        PyErr_SetString(PyExc_ValueError, "counts must be an int64 array with one item a range");
        PyBuffer_Release(&out);
        codec_release_ranges(&r);
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)r.data.buf;
    const int64_t *a = (const int64_t *)r.starts.buf, *b = (const int64_t *)r.ends.buf;
    int64_t *counts = (int64_t *)out.buf;
    for (Py_ssize_t i = 0; i < r.count; i++)
        counts[i] = header_count(base + a[i], b[i] - a[i]);
    PyBuffer_Release(&out);
    codec_release_ranges(&r);
    Py_RETURN_NONE;
}

/* decode_ranges(data, starts, ends, out) -> int: the parts decoded one after another into out (their
 * counts summing to out's length); -1 when all went well, else the index of the first that did not. */
PyObject *codec_py_decode_ranges(PyObject *self, PyObject *args)
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
                codec_decode_to(p, len, n, (char *)out.buf + at * itemsize, itemsize, &stop) != 0 || stop != p + len)
            bad = i;
        else
            at += (Py_ssize_t)n;
    }
    Py_END_ALLOW_THREADS
    if (bad < 0 && at != room)
        bad = r.count;
    PyBuffer_Release(&out);
    codec_release_ranges(&r);
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
    codec_release_ranges(r);
    return -1;
}

/* copy_ranges(data, starts, ends, out): the ranges copied one after another into out (a writable
 * buffer of exactly their total length). */
PyObject *codec_py_copy_ranges(PyObject *self, PyObject *args)
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
    codec_release_ranges(&r);
    Py_RETURN_NONE;
}

/* copy_entries(data, starts, ends, out): each range as a page entry, [u64 LE length][bytes], one after
 * another into out (a writable buffer of exactly their total length plus 8 bytes a range). */
PyObject *codec_py_copy_entries(PyObject *self, PyObject *args)
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
    codec_release_ranges(&r);
    Py_RETURN_NONE;
}



/* walk_entries(data, start, count, limit, out) -> int: the positions of `count` consecutive
 * [u64 LE n][n bytes] entries from byte `start` of data (a page's entries, FORMAT.md section 4):
 * out (int64, count + 1 items) gets each entry's prefix position and, last, the end of the last one.
 * -1 when every entry lies inside [start, limit), else the index of the first that does not (out is
 * filled up to it). limit must not pass the buffer's end. */
PyObject *codec_py_walk_entries(PyObject *self, PyObject *args)
{
    PyObject *data, *target;
    long long start, count, limit;
    Py_buffer in, out;
    if (!PyArg_ParseTuple(args, "OLLLO:walk_entries", &data, &start, &count, &limit, &target))
        return NULL;
    if (PyObject_GetBuffer(data, &in, PyBUF_SIMPLE) < 0)
        return NULL;
    if (codec_get_ints(target, &out, 1) < 0) {
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
