/* The Python arguments of the kernels' entry points (_kernels.c, _chain.c), checked: buffers of the sizes
 * the loops will read and write, or an exception. Declared in _kernels.h. */
#include "_kernels.h"
#include <string.h>

int get_pixels(PyObject *obj, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return -1;
    if (view->len % 3) {
        PyErr_Format(PyExc_ValueError, "expected whole RGB pixels, got %zd bytes", view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

int get_table(PyObject *obj, Py_buffer *view, Py_ssize_t size, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len != size) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", what, size, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

int get_image(PyObject *obj, struct image *im)
{
    if (PyObject_GetBuffer(obj, &im->view, PyBUF_STRIDED_RO) < 0)
        return -1;
    if (im->view.ndim != 3 || im->view.itemsize != 1 || im->view.shape[2] < 1 || im->view.shape[2] > 4) {
        PyErr_Format(PyExc_ValueError, "expected a uint8 <H,W,C> image with 1 to 4 channels, got %d dimensions "
                     "of %zd-byte items", im->view.ndim, im->view.itemsize);
        PyBuffer_Release(&im->view);
        return -1;
    }
    im->h = im->view.shape[0], im->w = im->view.shape[1], im->c = im->view.shape[2];
    im->sy = im->view.strides[0], im->sx = im->view.strides[1], im->sc = im->view.strides[2];
    return 0;
}

int check_kinds(const char *kinds, Py_ssize_t steps)
{
    for (Py_ssize_t i = 0; i < steps; i++)
        if (kinds[i] < 0 || kinds[i] > 3) {
            PyErr_Format(PyExc_ValueError, "adjustment %d is not one of 0..3", (int)kinds[i]);
            return -1;
        }
    return 0;
}

/* The image as an RGB source (channels adjacent), or -1 with an error and the view released. */
int get_rgb(PyObject *obj, struct image *im, struct source *src)
{
    if (get_image(obj, im) < 0)
        return -1;
    if (im->c != 3 || im->sc != 1) {
        PyErr_Format(PyExc_ValueError, "expected an RGB image with adjacent channels, got %zd channels "
                     "(channel stride %zd)", im->c, im->sc);
        PyBuffer_Release(&im->view);
        return -1;
    }
    *src = (struct source){(const uint8_t *)im->view.buf, im->h, im->w, im->sy, im->sx};
    return 0;
}

/* A writable C-contiguous float32 output of exactly values floats. */
int get_floats(PyObject *obj, Py_buffer *out, Py_ssize_t values)
{
    if (PyObject_GetBuffer(obj, out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return -1;
    if (out->len != values * (Py_ssize_t)sizeof(float)) {
        PyErr_Format(PyExc_ValueError, "image of %zd values, output of %zd bytes", values, out->len);
        PyBuffer_Release(out);
        return -1;
    }
    return 0;
}

/* A level run's arithmetic (struct levels: twelve float32, the operands of its multiply, add, subtract and
 * divide per channel), or None: into k, lv->k pointing at it (NULL for None). 0, or -1 with an exception. */
int get_program(PyObject *obj, float *k, struct levels *lv)
{
    Py_buffer view;
    lv->k = NULL;
    if (obj == NULL || obj == Py_None)
        return 0;
    if (get_table(obj, &view, 12 * (Py_ssize_t)sizeof(float), "program") < 0)
        return -1;
    memcpy(k, view.buf, 12 * sizeof(float));
    PyBuffer_Release(&view);
    lv->k = k;
    return 0;
}
