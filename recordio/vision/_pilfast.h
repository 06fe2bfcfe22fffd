/* Shared by _pilfast.c (decoding, the chain, the module) and _pilfast_resample.c (Pillow's resampling). */
#ifndef RECORDIO_PILFAST_H
#define RECORDIO_PILFAST_H
#include <stdint.h>

#define PRECISION_BITS (32 - 8 - 2)

struct coeffs {
    int ksize, *bounds; /* bounds[2i]: first input, bounds[2i + 1]: taps */
    int32_t *kk;        /* count x ksize fixed-point coefficients, zero past the taps */
};

/* An image: rows of `stride` bytes, `bands` bytes a pixel (4: RGBX, 1: grey), whose pixel (0, 0) is the
 * pixel (y0, x0) of the coordinates it lives in; coefficient bounds are in the input's coordinates. */
struct plane {
    uint8_t *px;
    long rows, cols, stride, y0, x0;
    int bands;
};

/* Pillow's coefficients for the outputs first..first+count-1 of a resize in_size -> out_size. */
int pilfast_precompute(int in_size, int out_size, int first, int count, int cubic, struct coeffs *c);
/* The passes (out's rows/columns in out's coordinates); the AVX2 loops where vector and the CPU allow. */
int pilfast_horizontal(const struct plane *in, struct plane *out, const struct coeffs *c, int vector);
void pilfast_vertical(const struct plane *in, struct plane *out, const struct coeffs *c, int vector);

#endif
