/* The keyed Feistel permutation of recordio/dataset/order/permutation.py (its numpy code is the reference).
 * _codec.h lists the other files of the module.
 */
#include "_codec.h"

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
PyObject *codec_py_permute(PyObject *self, PyObject *args)
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
    if (codec_get_ints(pos_obj, &pos, 0) < 0)
        return NULL;
    if (codec_get_ints(out_obj, &out, 1) < 0) {
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
