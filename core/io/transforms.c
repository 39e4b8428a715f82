/* transforms.c: fastnn.data.transforms, a list of picture transforms run in C, in order, on one
 * float32 [C, H, W] picture (resize, crops, flip, colour jitter, normalisation, grey).
 * defines: fnn_transform_apply.
 * The random steps draw from a splitmix64 state the caller owns (the loader derives one per item
 * from its seeded stream), so nothing here is global and the same state gives the same picture. */
#include "internal.h"
#include <math.h>
#include <string.h>

static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double uniform(uint64_t *s) { return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0); }
static double uniform_in(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * uniform(s); }
static int64_t int_in(uint64_t *s, int64_t lo, int64_t hi) {   /* lo..hi inclusive */
    return lo + (int64_t)(next_u64(s) % (uint64_t)(hi - lo + 1));
}

static void move(fnn_tensor *dst, fnn_tensor *src) {   /* dst takes src's contents */
    fnn_tensor_clear(dst);
    *dst = *src;
    fnn_tensor_init(src);
}

/* resize cur to h x w, in place (cur's old contents dropped) */
static int resize_to(fnn_tensor *cur, int64_t h, int64_t w) {
    fnn_tensor r;
    fnn_tensor_init(&r);
    int rc = fnn_image_resize(&r, cur, h, w);
    if (rc) return rc;
    move(cur, &r);
    return FNN_STATUS_OK;
}

static int crop_to(fnn_tensor *cur, int64_t top, int64_t left, int64_t h, int64_t w) {
    fnn_tensor r;
    fnn_tensor_init(&r);
    int rc = fnn_image_crop(&r, cur, top, left, h, w);
    if (rc) return rc;
    move(cur, &r);
    return FNN_STATUS_OK;
}

/* torchvision's RandomResizedCrop.get_params: ten tries at an area and a log-uniform aspect, then
 * the centre crop clamped to the ratio range */
static void rrc_box(uint64_t *s, int64_t H, int64_t W, const double *p, int64_t *top, int64_t *left, int64_t *h,
                    int64_t *w) {
    double area = (double)H * (double)W;
    double lr0 = log(p[2]), lr1 = log(p[3]);
    for (int i = 0; i < 10; i++) {
        double target = area * uniform_in(s, p[0], p[1]);
        double aspect = exp(uniform_in(s, lr0, lr1));
        int64_t cw = (int64_t)lround(sqrt(target * aspect)), ch = (int64_t)lround(sqrt(target / aspect));
        if (cw > 0 && cw <= W && ch > 0 && ch <= H) {
            *top = int_in(s, 0, H - ch);
            *left = int_in(s, 0, W - cw);
            *h = ch;
            *w = cw;
            return;
        }
    }
    double in_ratio = (double)W / (double)H;
    int64_t cw, ch;
    if (in_ratio < p[2]) { cw = W; ch = (int64_t)lround(W / p[2]); }
    else if (in_ratio > p[3]) { ch = H; cw = (int64_t)lround(H * p[3]); }
    else { cw = W; ch = H; }
    if (ch < 1) ch = 1;
    if (cw < 1) cw = 1;
    if (ch > H) ch = H;
    if (cw > W) cw = W;
    *top = (H - ch) / 2;
    *left = (W - cw) / 2;
    *h = ch;
    *w = cw;
}

static float clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

/* brightness, contrast, saturation factors (each 1 when its amount is 0), in that order */
static void jitter(float *d, int64_t c, int64_t plane, double fb, double fc, double fs) {
    if (fb != 1.0)
        for (int64_t i = 0; i < c * plane; i++) d[i] = clamp01((float)(d[i] * fb));
    if (fc != 1.0) {
        double mean = 0;   /* the mean of the grey picture, as torchvision's adjust_contrast */
        for (int64_t i = 0; i < plane; i++)
            mean += c == 3 ? 0.299 * d[i] + 0.587 * d[plane + i] + 0.114 * d[2 * plane + i] : d[i];
        mean /= (double)plane;
        for (int64_t i = 0; i < c * plane; i++) d[i] = clamp01((float)(fc * d[i] + (1 - fc) * mean));
    }
    if (fs != 1.0 && c == 3)
        for (int64_t i = 0; i < plane; i++) {
            double g = 0.299 * d[i] + 0.587 * d[plane + i] + 0.114 * d[2 * plane + i];
            for (int k = 0; k < 3; k++) d[k * plane + i] = clamp01((float)(fs * d[k * plane + i] + (1 - fs) * g));
        }
}

int fnn_transform_apply(fnn_tensor *out, const fnn_tensor *x, int n, const fnn_transform_step *steps, uint64_t *rng) {
    FNN_CHECK(out && x, FNN_STATUS_ARG, "transforms: no picture given");
    FNN_CHECK(n >= 0 && (n == 0 || steps), FNN_STATUS_ARG, "transforms: %d steps", n);
    FNN_CHECK(rng, FNN_STATUS_ARG, "transforms: no random state");
    FNN_CHECK(x->ndim == 2 || x->ndim == 3, FNN_STATUS_SHAPE, "transforms: expected a picture [C,H,W] or [H,W], got %s",
              fnn_shape_of(x).s);
    fnn_tensor cur;
    fnn_tensor_init(&cur);
    int rc = fnn_image_crop(&cur, x, 0, 0, x->shape[x->ndim - 2], x->shape[x->ndim - 1]);   /* a contiguous copy */
    if (rc) return rc;
    for (int i = 0; i < n && rc == 0; i++) {
        const fnn_transform_step *st = &steps[i];
        int64_t C_ = cur.shape[0], H = cur.shape[1], W = cur.shape[2];
        switch (st->kind) {
        case FNN_TRANSFORM_RESIZE: {
            int64_t h = st->h, w = st->w;
            if (w <= 0) {   /* the shorter side to h, the other keeping the aspect (rounded down) */
                if (H <= W) { w = (int64_t)((double)W * h / H); }
                else { w = h; h = (int64_t)((double)H * w / W); }
            }
            rc = resize_to(&cur, h, w);
            break;
        }
        case FNN_TRANSFORM_CENTER_CROP:
            if (st->h > H || st->w > W) {
                rc = FNN_FAIL(FNN_STATUS_SHAPE, "transforms.CenterCrop: %lldx%lld is larger than the %lldx%lld picture",
                              (long long)st->w, (long long)st->h, (long long)W, (long long)H);
                break;
            }
            /* rounded half to even, as Python round() in torchvision */
            rc = crop_to(&cur, (int64_t)nearbyint((H - st->h) / 2.0), (int64_t)nearbyint((W - st->w) / 2.0), st->h, st->w);
            break;
        case FNN_TRANSFORM_RANDOM_RESIZED_CROP: {
            int64_t top, left, h, w;
            rrc_box(rng, H, W, st->p, &top, &left, &h, &w);
            rc = crop_to(&cur, top, left, h, w);
            if (rc == 0) rc = resize_to(&cur, st->h, st->w);
            break;
        }
        case FNN_TRANSFORM_HFLIP:
            if (uniform(rng) < st->p[0]) {
                fnn_tensor r;
                fnn_tensor_init(&r);
                rc = fnn_image_hflip(&r, &cur);
                if (rc == 0) move(&cur, &r);
            }
            break;
        case FNN_TRANSFORM_COLOR_JITTER: {
            double f[3];
            for (int k = 0; k < 3; k++) {
                double a = st->p[k];
                f[k] = a > 0 ? uniform_in(rng, a < 1 ? 1 - a : 0, 1 + a) : 1.0;
            }
            jitter(fnn_tensor_mutable_data(&cur), C_, H * W, f[0], f[1], f[2]);
            break;
        }
        case FNN_TRANSFORM_NORMALIZE: {
            int m = (int)st->h;   /* values given: 1 (every channel) or one per channel */
            if (m != 1 && m != C_) {
                rc = FNN_FAIL(FNN_STATUS_SHAPE, "transforms.Normalize: %d means and stds for a picture of %lld channels",
                              m, (long long)C_);
                break;
            }
            float *d = fnn_tensor_mutable_data(&cur);
            for (int64_t k = 0; k < C_; k++) {
                double mean = st->p[m == 1 ? 0 : k], sd = st->p[4 + (m == 1 ? 0 : k)];
                float *row = d + k * H * W;
                for (int64_t j = 0; j < H * W; j++) row[j] = (float)((row[j] - mean) / sd);
            }
            break;
        }
        case FNN_TRANSFORM_GRAYSCALE: {
            fnn_tensor r;
            fnn_tensor_init(&r);
            rc = fnn_image_to_gray(&r, &cur);
            if (rc == 0) move(&cur, &r);
            break;
        }
        default:
            rc = FNN_FAIL(FNN_STATUS_ARG, "transforms: unknown step kind %d", st->kind);
        }
    }
    if (rc) { fnn_tensor_clear(&cur); return rc; }
    *out = cur;
    return FNN_STATUS_OK;
}
