/* The module recordio.mindrecord._codec: its method table, and the entry points of MindRecord's
 * compressed integer arrays (FORMAT.md §5.2; ints_numpy.py is the reference). The compression itself is
 * in _codec_ints.c; _codec.h lists the other files.
 *
 * The decoder only says "valid" or "not valid": on any malformed input an entry point returns -1 / False
 * and the Python side runs the reference decoder, which raises the error with its message.
 */
#include "_codec.h"

/* A part of a few thousand elements decodes in about a microsecond: less than handing the GIL to
 * another thread and waiting to get it back, so only large parts release it. */
#define RELEASE_GIL_FROM (1 << 18)

static int decode_unlocked(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize)
{
    int ok;
    if (n < RELEASE_GIL_FROM)
        return codec_decode_into(p, len, n, out, itemsize) == 0;
    Py_BEGIN_ALLOW_THREADS
    ok = codec_decode_into(p, len, n, out, itemsize) == 0;
    Py_END_ALLOW_THREADS
    return ok;
}

/* --- Python glue ------------------------------------------------------------------------------ */

/* A contiguous native int32/int64 buffer into view (writable when asked); -1 with a TypeError. */
int codec_get_ints(PyObject *obj, Py_buffer *view, int writable)
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
    int64_t n = codec_measure((const uint8_t *)data.buf, data.len);
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
    if (codec_get_ints(target, &out, 1) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    int64_t n = codec_measure((const uint8_t *)data.buf, data.len);
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
    if (codec_get_ints(target, &out, 1) < 0) {
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
        int64_t n = codec_measure((const uint8_t *)data.buf, data.len);
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
    Py_ssize_t size = codec_encode_into(in->buf, (int)in->itemsize, n, (uint8_t *)PyBytes_AS_STRING(out));
    if (_PyBytes_Resize(&out, size) < 0)
        return NULL;
    return out;
}

/* encode(values) -> bytes: a contiguous native int32/int64 buffer, encoded. */
static PyObject *py_encode(PyObject *self, PyObject *arg)
{
    Py_buffer in;
    if (codec_get_ints(arg, &in, 0) < 0)
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
    if (codec_get_ints(obj, &in, 0) < 0)
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

static PyMethodDef methods[] = {
    {"measure", py_measure, METH_O,
     "measure(part) -> int: the element count of a well-formed encoding, else -1."},
    {"measure_many", py_measure_many, METH_O,
     "measure_many(parts) -> list[int]: measure() of each part."},
    {"decode_into", py_decode_into, METH_VARARGS,
     "decode_into(part, out) -> bool: decode into out (int32/int64 buffer of exactly the part's count); "
     "False when malformed or a value does not fit."},
    {"measure_ranges", codec_py_measure_ranges, METH_VARARGS,
     "measure_ranges(data, starts, ends, counts): each range's element count (-1: malformed)"},
    {"decode_ranges", codec_py_decode_ranges, METH_VARARGS,
     "decode_ranges(data, starts, ends, out) -> -1, or the index of the first part that failed"},
    {"walk_entries", codec_py_walk_entries, METH_VARARGS,
     "walk_entries(data, start, count, limit, out) -> -1, or the index of the first entry that does not "
     "fit before limit (out: each entry's prefix position, then the end)"},
    {"copy_ranges", codec_py_copy_ranges, METH_VARARGS,
     "copy_ranges(data, starts, ends, out): the ranges one after another into out"},
    {"copy_entries", codec_py_copy_entries, METH_VARARGS,
     "copy_entries(data, starts, ends, out): each range as a page entry ([u64 LE length][bytes]) into out"},
    {"decode_records", codec_py_decode_records, METH_VARARGS,
     "decode_records(data, starts, ends, names, kinds, outs) -> -1, or the index of the first record "
     "not read (msgpack maps of scalar fields into columns)"},
    {"permute", codec_py_permute, METH_VARARGS,
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
    codec_init();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "SIMD", codec_simd()) < 0)
        Py_CLEAR(m);
    return m;
}
