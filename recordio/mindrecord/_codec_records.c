/* Raw records: msgpack maps of scalar fields, read into columns (FORMAT.md §4). _codec.h lists the
 * other files of the module.
 *
 * A raw record is a msgpack map of the schema's raw fields (ints, floats, strings). decode_records reads
 * a batch of them straight into columns; anything it does not expect (a record that is not a map of
 * exactly the schema's fields, each once; a value of another type; an int outside int64; a string that
 * is not strict UTF-8; a record that does not end where its range ends) makes it give up on the batch,
 * and the Python side decodes it with msgpack (the reference, whose errors name file, row and field). */
#include "_codec.h"

#include <string.h>

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
PyObject *codec_py_decode_records(PyObject *self, PyObject *args)
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
    if (codec_get_ranges(data, starts, ends, &r) < 0)
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
    codec_release_ranges(&r);
    return ok ? PyLong_FromSsize_t(bad) : NULL;
}
