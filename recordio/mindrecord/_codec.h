/* Shared declarations of the compiled codec recordio.mindrecord._codec, one extension built from:
 *
 *   _codec.c          the module: its method table, and the integer-array entry points (measure, decode,
 *                     encode)
 *   _codec_ints.c     the integer-array compression itself (FORMAT.md §5.2): tables, SIMD loops, measuring,
 *                     decoding and encoding, without Python objects
 *   _codec_ranges.c   ranges of one buffer: parts decoded or copied one after another, page entries walked
 *   _codec_records.c  raw records (msgpack maps of scalar fields) read into columns
 *   _codec_permute.c  the keyed Feistel permutation of recordio/dataset/order/permutation.py
 *
 * Only what one file uses from another is declared here, with the codec_ prefix and hidden from the
 * shared object's symbol table (the module exports PyInit__codec alone); everything else stays static.
 */
#ifndef RECORDIO_MINDRECORD_CODEC_H
#define RECORDIO_MINDRECORD_CODEC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || defined(_WIN32)
#define HOST_LE 1
#else
#define HOST_LE 0
#endif

#if defined(__GNUC__)
#define CODEC_PRIVATE __attribute__((visibility("hidden")))
#else
#define CODEC_PRIVATE
#endif

/* --- _codec_ints.c ------------------------------------------------------------------------------- */

/* Fill the width tables and pick the SIMD loops (RECORDIO_CODEC_SIMD caps them); once, at import. */
CODEC_PRIVATE void codec_init(void);

/* The SIMD decoding loop that runs: 2 AVX2, 1 SSSE3, 0 none (the module's SIMD constant). */
CODEC_PRIVATE int codec_simd(void);

/* The element count of a well-formed encoding of `len` bytes, or -1. */
CODEC_PRIVATE int64_t codec_measure(const uint8_t *p, Py_ssize_t len);

/* Decode n elements (already measured) into out (itemsize 4 or 8); 0, or -1 when a value does not fit
 * an int32 output (or the part changed since it was measured). */
CODEC_PRIVATE int codec_decode_into(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize);

/* codec_decode_into, also telling where the elements ended (`*stop`): a part is well formed when its
 * elements end exactly at its end. */
CODEC_PRIVATE int codec_decode_to(const uint8_t *p, Py_ssize_t len, int64_t n, void *out, int itemsize,
                                  const uint8_t **stop);

/* Encode n elements into out (room for 4 + ceil(n/4) + itemsize * n bytes); the encoding's length. */
CODEC_PRIVATE Py_ssize_t codec_encode_into(const void *values, int itemsize, Py_ssize_t n, uint8_t *out);

/* --- _codec.c: arguments ------------------------------------------------------------------------- */

/* A contiguous native int32/int64 buffer (writable when asked) into view; -1 with a TypeError. */
CODEC_PRIVATE int codec_get_ints(PyObject *obj, Py_buffer *view, int writable);

/* --- _codec_ranges.c ----------------------------------------------------------------------------- */

/* The ranges [starts[i], ends[i]) of a buffer, given as two int64 arrays of one length. */
typedef struct {
    Py_buffer data, starts, ends;
    Py_ssize_t count;
} Ranges;

/* The three buffers taken and every range checked to lie inside data; -1 with an error set. */
CODEC_PRIVATE int codec_get_ranges(PyObject *data, PyObject *starts, PyObject *ends, Ranges *r);
CODEC_PRIVATE void codec_release_ranges(Ranges *r);

/* --- the entry points the method table (_codec.c) lists from the other files ----------------------- */

CODEC_PRIVATE PyObject *codec_py_measure_ranges(PyObject *self, PyObject *args);
CODEC_PRIVATE PyObject *codec_py_decode_ranges(PyObject *self, PyObject *args);
CODEC_PRIVATE PyObject *codec_py_copy_ranges(PyObject *self, PyObject *args);
CODEC_PRIVATE PyObject *codec_py_copy_entries(PyObject *self, PyObject *args);
CODEC_PRIVATE PyObject *codec_py_walk_entries(PyObject *self, PyObject *args);
CODEC_PRIVATE PyObject *codec_py_decode_records(PyObject *self, PyObject *args);
CODEC_PRIVATE PyObject *codec_py_permute(PyObject *self, PyObject *args);

#endif
