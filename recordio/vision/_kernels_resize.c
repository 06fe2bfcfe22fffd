/* Bilinear resizing of uint8 images, byte for byte as OpenCV's cv::resize with INTER_LINEAR (its
 * fixed-point path for 8-bit images), and optionally only a window of the output: the rows and columns a
 * crop that follows keeps.
 *
 * OpenCV's arithmetic, repeated here:
 * - output column dx samples fx = (float)((dx + 0.5) * scale_x - 0.5), scale_x = 1 / (dw / sw) in double;
 *   sx = floor(fx), fx -= sx; at the edges (sx < 0, or sx >= sw - 1) fx = 0 and sx is clamped;
 *   coefficients a0 = saturate_cast<short>((1 - fx) * 2048), a1 = saturate_cast<short>(fx * 2048), each
 *   rounded on its own (they need not add up to 2048);
 * - rows the same, except that fy is not reset at the edges: only the two row indices are clamped;
 * - horizontal pass, exact in int32: H = S[sx] * a0 + S[sx + 1] * a1 (per channel);
 * - vertical pass: (((b0 * (H0 >> 4)) >> 16) + ((b1 * (H1 >> 4)) >> 16) + 2) >> 2.
 * (An exact 2x reduction in both directions is INTER_AREA in OpenCV: the caller leaves it to OpenCV.)
 *
 * The image read may be a part of the one resized (a decoded box around the window a crop keeps): the
 * positions are those of the whole image, and the window must read only inside the part (the caller
 * sizes it with a pixel of margin; a window that reads outside is refused, never read).
 *
 * Each source row is passed horizontally once (two rows are kept, as OpenCV keeps them). With three
 * adjacent channels the loops of _kernels_simd.c do the horizontal pass from a copy of the row: with
 * AVX-512 VBMI one two-register byte permute per 32 outputs picks the sample pairs, with AVX2 one 32-bit gather per 8
 * outputs; then one 16-bit multiply-add. The vertical pass is OpenCV's own 16-bit form, 32 outputs at a
 * time. tests/test_vision_resize_c.py compares every path with cv2.resize.
 */
#include "_kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline int16_t coefficient(float v)
{
    long r = lrintf(v * 2048.0f); /* cvRound: to nearest, ties to even */
    return (int16_t)(r < -32768 ? -32768 : r > 32767 ? 32767 : r);
}

static inline Py_ssize_t clip_row(Py_ssize_t y, Py_ssize_t h)
{
    return y < 0 ? 0 : y >= h ? h - 1 : y;
}

/* The work space of one resize: per output element (ow pixels of c channels, interleaved) the byte offset
 * of its left sample in a source row and its coefficient pair (a0 low, a1 high: one int32 for a 16-bit
 * multiply-add), a copy of the source row being passed (with room for the 32-bit loads past its last
 * sample), and the horizontal results of two source rows. */
struct work {
    int32_t *ofs, *alpha, *hrows[2], *base;
    uint8_t *row, *idx;
    Py_ssize_t row_of[2], c, n;
    int group; /* elements per planned group (base, idx): RESIZE_GROUP, 8, or 0 for no plan */
};

static void work_free(struct work *wk)
{
    free(wk->ofs);
    free(wk->alpha);
    free(wk->base);
    free(wk->idx);
    free(wk->row);
    free(wk->hrows[0]);
    free(wk->hrows[1]);
}

static int work_alloc(struct work *wk, Py_ssize_t sw, Py_ssize_t c, Py_ssize_t ow)
{
    memset(wk, 0, sizeof(*wk));
    wk->c = c, wk->n = c * ow;
    wk->row_of[0] = wk->row_of[1] = -1;
    wk->ofs = malloc(sizeof(int32_t) * (size_t)wk->n);
    wk->alpha = malloc(sizeof(int32_t) * (size_t)wk->n);
    wk->row = calloc((size_t)(c * sw + 128), 1);
    wk->hrows[0] = malloc(sizeof(int32_t) * (size_t)wk->n);
    wk->hrows[1] = malloc(sizeof(int32_t) * (size_t)wk->n);
    if (!wk->ofs || !wk->alpha || !wk->row || !wk->hrows[0] || !wk->hrows[1]) {
        work_free(wk);
        return -1;
    }
    return 0;
}

/* Where the byte permutes of simd_hresize_row apply (three channels): per group of wk->group elements the
 * first byte of the span that holds its samples, and each sample's place in it; a group whose samples
 * span more keeps base -1 (loads). A sample multiplied by 0 (the right one at the right edge) is read at
 * the left one's place.
 * - AVX-512 VBMI: groups of RESIZE_GROUP elements within 128 bytes (up to a reduction by about 3.9); idx
 *   holds the left and right sample of element i at bytes 64 g + 2 i and 64 g + 2 i + 1;
 * - AVX2: groups of 8 elements within 32 bytes (up to a reduction by about 3.3); idx holds, at 64 g, the
 *   byte shuffle that puts each element's samples in the low bytes of its two 16-bit lanes (a sample's
 *   place modulo 16; 0x80 zeroes the high bytes), and at 64 g + 32 the blend mask that takes the
 *   places 16 and up from the span's second half. */
static int plan_groups(struct work *wk)
{
    const int wide = simd_wide();
    const Py_ssize_t group = wide ? RESIZE_GROUP : 8, span = wide ? 128 : 32, groups = wk->n / group;
    if (wk->c != 3 || !simd_on() || groups == 0)
        return 0;
    wk->group = (int)group;
    wk->base = malloc(sizeof(int32_t) * (size_t)groups);
    wk->idx = calloc((size_t)groups, 64);
    if (!wk->base || !wk->idx)
        return -1;
    for (Py_ssize_t g = 0; g < groups; g++) {
        const Py_ssize_t e0 = g * group;
        int32_t lo = wk->ofs[e0], hi = 0;
        for (Py_ssize_t i = 0; i < group; i++) {
            const int32_t left = wk->ofs[e0 + i], right = wk->alpha[e0 + i] >> 16 ? left + 3 : left;
            lo = left < lo ? left : lo;
            hi = right > hi ? right : hi;
        }
        wk->base[g] = hi - lo < span ? lo : -1;
        uint8_t *idx = wk->idx + 64 * g;
        for (Py_ssize_t i = 0; i < group && wk->base[g] >= 0; i++) {
            const int32_t left = wk->ofs[e0 + i] - lo, right = (wk->alpha[e0 + i] >> 16 ? wk->ofs[e0 + i] + 3 : wk->ofs[e0 + i]) - lo;
            if (wide) {
                idx[2 * i] = (uint8_t)left, idx[2 * i + 1] = (uint8_t)right;
                continue;
            }
            idx[4 * i] = (uint8_t)(left & 15), idx[4 * i + 1] = 0x80;
            idx[4 * i + 2] = (uint8_t)(right & 15), idx[4 * i + 3] = 0x80;
            idx[32 + 4 * i] = left >= 16 ? 0xFF : 0, idx[32 + 4 * i + 2] = right >= 16 ? 0xFF : 0;
        }
    }
    return 0;
}

/* The horizontal pass of source row p (sw pixels of c adjacent channels) into H (n int32). At the right
 * edge a1 is 0 and the second sample is the pixel itself (never read past the row). */
static void hresize_row(struct work *wk, const uint8_t *p, Py_ssize_t sw, int32_t *H)
{
    const Py_ssize_t c = wk->c;
    Py_ssize_t e = 0;
    if (c == 3) {
        memcpy(wk->row, p, (size_t)(3 * sw));
        e = simd_hresize_row(wk->row, wk->ofs, wk->alpha, wk->base, wk->idx, wk->group, H, wk->n);
    }
    const Py_ssize_t last = c * (sw - 1);
    for (; e < wk->n; e++) {
        const Py_ssize_t o = wk->ofs[e], k = o % c;
        const Py_ssize_t next = o + c <= last + k ? o + c : o;
        H[e] = p[o] * (int16_t)(wk->alpha[e] & 0xFFFF) + p[next] * (int16_t)(wk->alpha[e] >> 16);
    }
}

/* The horizontal results of source row y, passed now unless one of the two kept rows is y; keep: the
 * kept row that must not be replaced (-1: none). */
static const int32_t *hrow(struct work *wk, const uint8_t *base, Py_ssize_t sy, Py_ssize_t sw, Py_ssize_t y,
                           Py_ssize_t keep)
{
    for (int k = 0; k < 2; k++)
        if (wk->row_of[k] == y)
            return wk->hrows[k];
    int k = wk->row_of[0] == keep ? 1 : 0;
    hresize_row(wk, base + y * sy, sw, wk->hrows[k]);
    wk->row_of[k] = y;
    return wk->hrows[k];
}

/* The two source rows output row i reads (clipped to the whole image, then made relative to the part)
 * and its coefficients; a row whose coefficient is 0 may be the other one (its samples count 0 either
 * way). -1 when a row it needs is outside the part. */
static int source_rows(const struct resize_source *src, double scale_y, Py_ssize_t dy, Py_ssize_t *ya,
                       Py_ssize_t *yb, int16_t *b0, int16_t *b1)
{
    float fy = (float)(((double)dy + 0.5) * scale_y - 0.5);
    Py_ssize_t y = (Py_ssize_t)floorf(fy);
    fy -= (float)y;
    *b0 = coefficient(1.0f - fy), *b1 = coefficient(fy);
    *ya = clip_row(y, src->full_h) - src->y0, *yb = clip_row(y + 1, src->full_h) - src->y0;
    if (*b1 == 0 && (*yb < 0 || *yb >= src->h))
        *yb = *ya;
    if (*b0 == 0 && (*ya < 0 || *ya >= src->h))
        *ya = *yb;
    return *ya >= 0 && *ya < src->h && *yb >= 0 && *yb < src->h ? 0 : -1;
}

/* The columns: per output element its left sample's byte offset in a part row and its coefficients. */
static int source_columns(struct work *wk, const struct resize_source *src, double scale_x, Py_ssize_t ox,
                          Py_ssize_t ow)
{
    const Py_ssize_t c = src->c;
    for (Py_ssize_t j = 0; j < ow; j++) {
        float fx = (float)(((double)(ox + j) + 0.5) * scale_x - 0.5);
        Py_ssize_t sx = (Py_ssize_t)floorf(fx);
        fx -= (float)sx;
        if (sx < 0)
            fx = 0.0f, sx = 0;
        if (sx >= src->full_w - 1)
            fx = 0.0f, sx = src->full_w - 1;
        const int16_t a0 = coefficient(1.0f - fx), a1 = coefficient(fx);
        sx -= src->x0;
        if (sx < 0 || sx >= src->w || (a1 != 0 && sx + 1 >= src->w))
            return -1;
        const int32_t pair = (int32_t)((uint32_t)(uint16_t)a0 | (uint32_t)(uint16_t)a1 << 16);
        for (Py_ssize_t k = 0; k < c; k++)
            wk->ofs[c * j + k] = (int32_t)(c * sx + k), wk->alpha[c * j + k] = pair;
    }
    return 0;
}

int resize_linear(const struct resize_source *src, uint8_t *out, Py_ssize_t osy, Py_ssize_t dh, Py_ssize_t dw,
                  Py_ssize_t oy, Py_ssize_t ox, Py_ssize_t oh, Py_ssize_t ow)
{
    struct work wk;
    if (work_alloc(&wk, src->w, src->c, ow) < 0)
        return -1;
    const double scale_x = 1.0 / ((double)dw / (double)src->full_w);
    const double scale_y = 1.0 / ((double)dh / (double)src->full_h);
    int failed = source_columns(&wk, src, scale_x, ox, ow) < 0 ? -2 : plan_groups(&wk);
    for (Py_ssize_t i = 0; i < oh && !failed; i++) {
        Py_ssize_t ya, yb;
        int16_t b0, b1;
        if (source_rows(src, scale_y, oy + i, &ya, &yb, &b0, &b1) < 0) {
            failed = -2;
            break;
        }
        const int32_t *H0 = hrow(&wk, src->base, src->sy, src->w, ya, -1);
        const int32_t *H1 = hrow(&wk, src->base, src->sy, src->w, yb, ya);
        uint8_t *o = out + i * osy;
        for (Py_ssize_t e = simd_vresize_row(H0, H1, wk.n, b0, b1, o); e < wk.n; e++)
            o[e] = (uint8_t)((((b0 * (H0[e] >> 4)) >> 16) + ((b1 * (H1[e] >> 4)) >> 16) + 2) >> 2);
    }
    work_free(&wk);
    return failed;
}
