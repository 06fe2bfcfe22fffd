/* recordio._keys: the one-sample folds of recordio/keys.py in C (the host draws one sample at a time).
 *
 * A fold step is keys.py's _fold_int: h = splitmix64(h + 0x9E3779B97F4A7C15 + w) in uint64 wrapping
 * arithmetic, w a word as its 64 two's-complement bits. The state h travels as a Python int in
 * [0, 2**64). Each function gives exactly the bits of the Python ints it stands in for:
 *
 *   fold(h, words)          draw words: each int(w), refused (OverflowError naming it) outside int64;
 *   fold_wrapping(h, words) key words (seed, epoch, row, op, small-array values): int(w) & (2**64 - 1);
 *   unit_floats(h, draws)   per tuple of draw words: (fold(h, words) >> 11) * 2**-53.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define GOLDEN 0x9E3779B97F4A7C15ULL

static inline uint64_t splitmix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* int(w) as a new reference (the word itself when it is an int already). */
static PyObject *as_int(PyObject *w)
{
    if (PyLong_CheckExact(w)) {
        Py_INCREF(w);
        return w;
    }
    return PyNumber_Long(w);
}

/* The bits of draw word w: 0, or -1 with an exception set (OverflowError when int(w) is outside int64). */
static int draw_word(PyObject *w, uint64_t *bits)
{
    PyObject *value = as_int(w);
    int overflow = 0;
    long long x;

    if (value == NULL)
        return -1;
    x = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow)
        PyErr_Format(PyExc_OverflowError, "draw word %S is outside int64", value);
    Py_DECREF(value);
    if (overflow || (x == -1 && PyErr_Occurred()))
        return -1;
    *bits = (uint64_t)x;
    return 0;
}

/* The bits of key word w: int(w) modulo 2**64. */
static int key_word(PyObject *w, uint64_t *bits)
{
    PyObject *value = as_int(w);
    unsigned long long x;

    if (value == NULL)
        return -1;
    x = PyLong_AsUnsignedLongLongMask(value);
    Py_DECREF(value);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *bits = (uint64_t)x;
    return 0;
}

/* Fold the words of the iterable `words` into *h, each read by `word`. */
static int fold_into(uint64_t *h, PyObject *words, int (*word)(PyObject *, uint64_t *))
{
    PyObject *seq = PySequence_Fast(words, "words must be an iterable of integers");
    Py_ssize_t i, n;
    uint64_t w, x = *h;

    if (seq == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++) {
        if (word(PySequence_Fast_GET_ITEM(seq, i), &w) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        x = splitmix64(x + GOLDEN + w);
    }
    Py_DECREF(seq);
    *h = x;
    return 0;
}

static int state(PyObject *obj, uint64_t *h)
{
    unsigned long long x = PyLong_AsUnsignedLongLong(obj);

    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *h = (uint64_t)x;
    return 0;
}

static PyObject *fold_with(PyObject *const *args, Py_ssize_t nargs, const char *name,
                           int (*word)(PyObject *, uint64_t *))
{
    uint64_t h;

    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 arguments (h, words), %zd given", name, nargs);
        return NULL;
    }
    if (state(args[0], &h) < 0 || fold_into(&h, args[1], word) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *fold(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return fold_with(args, nargs, "fold", draw_word);
}

static PyObject *fold_wrapping(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return fold_with(args, nargs, "fold_wrapping", key_word);
}

static PyObject *unit_floats(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq, *out;
    Py_ssize_t i, n;
    uint64_t h0, h;

    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "unit_floats() takes 2 arguments (h, draws), %zd given", nargs);
        return NULL;
    }
    if (state(args[0], &h0) < 0)
        return NULL;
    seq = PySequence_Fast(args[1], "draws must be an iterable of tuples of draw words");
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n);
    for (i = 0; out != NULL && i < n; i++) {
        PyObject *u;

        h = h0;
        if (fold_into(&h, PySequence_Fast_GET_ITEM(seq, i), draw_word) < 0
                || (u = PyFloat_FromDouble((double)(h >> 11) * (1.0 / 9007199254740992.0))) == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, u);
    }
    Py_DECREF(seq);
    return out;
}

static PyMethodDef methods[] = {
    {"fold", (PyCFunction)(void (*)(void))fold, METH_FASTCALL,
     "fold(h, words) -> int: the uint64 state h after folding each draw word (int64; OverflowError outside)."},
    {"fold_wrapping", (PyCFunction)(void (*)(void))fold_wrapping, METH_FASTCALL,
     "fold_wrapping(h, words) -> int: the state h after folding each key word taken modulo 2**64."},
    {"unit_floats", (PyCFunction)(void (*)(void))unit_floats, METH_FASTCALL,
     "unit_floats(h, draws) -> list[float]: per tuple of draw words, (fold(h, words) >> 11) * 2**-53."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_keys", "SplitMix64 folds of recordio.keys for one sample, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__keys(void)
{
    return PyModule_Create(&module);
}
