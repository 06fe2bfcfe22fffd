/* The table pass of the fused level runs (fusion.py: Rescale/Normalize/HWC2CHW/ToTensor as one lookup per
 * channel), one row at a time: used by _kernels.lookup on its own and by adjust_steps after the colour
 * adjustments. */
#include "_kernels.h"

/* Three channels, adjacent, to float32 <3,H,W>: the loop the common case runs, sx a constant once inlined. */
static inline void planes_row(const float *t, const uint8_t *p, Py_ssize_t sx, Py_ssize_t w, float *o0, float *o1,
                              float *o2)
{
    for (Py_ssize_t x = 0; x < w; x++) {
        const uint8_t *px = p + x * sx;
        o0[x] = t[px[0]];
        o1[x] = t[256 + px[1]];
        o2[x] = t[512 + px[2]];
    }
}

VECTOR_CLONES void levels_from(const struct levels *lv, const uint8_t *p, Py_ssize_t sx, Py_ssize_t sc, Py_ssize_t c,
                               Py_ssize_t y, Py_ssize_t x0)
{
    const float *t = lv->t;
    Py_ssize_t w = lv->w, plane = lv->plane;
    if (lv->chw && c == 3 && sc == 1) {
        float *o0 = lv->out + y * w + x0, *o1 = o0 + plane, *o2 = o1 + plane;
        p += x0 * sx;
        if (sx == 3)
            planes_row(t, p, 3, w - x0, o0, o1, o2);
        else if (sx == -3)
            planes_row(t, p, -3, w - x0, o0, o1, o2);
        else
            planes_row(t, p, sx, w - x0, o0, o1, o2);
        return;
    }
    for (Py_ssize_t x = x0; x < w; x++)
        for (Py_ssize_t k = 0; k < c; k++) {
            float v = t[256 * k + p[x * sx + k * sc]];
            if (lv->chw)
                lv->out[k * plane + y * w + x] = v;
            else
                lv->out[(y * w + x) * c + k] = v;
        }
}

void levels_row(const struct levels *lv, const uint8_t *p, Py_ssize_t sx, Py_ssize_t sc, Py_ssize_t c, Py_ssize_t y)
{
    Py_ssize_t done = c == 3 && sc == 1 ? simd_levels_row(lv, p, sx, y) : 0;
    if (done < lv->w)
        levels_from(lv, p, sx, sc, c, y, done);
}
