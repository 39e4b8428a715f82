/* image.c: pictures from and to disk as float32 [C, H, W] tensors in [0, 1], and the geometric
 * operations on them (fastnn.image): PNG through libpng (core/io/png.c), JPEG through TurboJPEG.
 * defines: fnn_image_load, fnn_image_save, fnn_image_resize, fnn_image_crop, fnn_image_hflip,
 * fnn_image_to_gray.
 * Each call makes its own TurboJPEG handle, so nothing is shared between threads. A file the
 * decoders refuse (empty, truncated, a broken checksum, not a picture) is an error naming it. */
#include "internal.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <turbojpeg.h>

#define IMG_MAX_SIDE 65536
#define IMG_MAX_PIXELS ((int64_t)1 << 28)   /* 268M pixels: a header claiming more is refused */

/* the whole file into *buf (malloc'ed; the caller frees it) */
static int read_file(const char *path, uint8_t **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    FNN_CHECK(f, FNN_STATUS_IO, "image.load: cannot open %s: %s", path, strerror(errno));
    uint8_t *b = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 65536;
            uint8_t *nb = realloc(b, nc);
            if (!nb) { free(b); fclose(f); return FNN_FAIL(FNN_STATUS_OOM, "image.load: %s: out of memory", path); }
            b = nb;
            cap = nc;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(b); return FNN_FAIL(FNN_STATUS_IO, "image.load: cannot read %s", path); }
    *buf = b;
    *len = n;
    return FNN_STATUS_OK;
}

/* 8-bit interleaved pixels (h * w * c, c of 1..4) -> out: float32 [C, H, W] with C 1 or 3 (alpha dropped) */
static int to_tensor(fnn_tensor *out, const uint8_t *px, int w, int h, int c) {
    int oc = c >= 3 ? 3 : 1;
    int64_t shape[3] = {oc, h, w};
    int rc = fnn_empty(out, 3, shape);
    if (rc) return rc;
    float *d = fnn_tensor_mutable_data(out);
    float level[256];   /* v / 255 rounded once, so a level reads back as the float nearest to it */
    for (int v = 0; v < 256; v++) level[v] = (float)v / 255.0f;
    int64_t plane = (int64_t)w * h;
    for (int64_t i = 0; i < plane; i++)
        for (int k = 0; k < oc; k++) d[k * plane + i] = level[px[i * c + k]];
    return FNN_STATUS_OK;
}

/* png.c's message, copied out of the error slot before a new one is written over it */
static int png_failed(void) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", fnn_last_error());
    return FNN_FAIL(FNN_STATUS_IO, "image.load: %s", msg);
}

static int load_png(fnn_tensor *out, const char *path) {
    int w = 0, h = 0, c = 0;
    if (fnn_png_read(path, &w, &h, &c, NULL, 0) != 0) return png_failed();
    FNN_CHECK((int64_t)w * h <= IMG_MAX_PIXELS, FNN_STATUS_IO, "image.load: %s: %dx%d is too large", path, w, h);
    int64_t n = (int64_t)w * h * c;
    uint8_t *px = malloc((size_t)n);
    FNN_CHECK(px, FNN_STATUS_OOM, "image.load: %s: out of memory for %dx%d pixels", path, w, h);
    int w2 = 0, h2 = 0, c2 = 0;
    if (fnn_png_read(path, &w2, &h2, &c2, px, n) != 0) {
        free(px);
        return png_failed();
    }
    int rc = FNN_STATUS_OK;
    if (w2 != w || h2 != h || c2 != c) rc = FNN_FAIL(FNN_STATUS_IO, "image.load: %s changed while being read", path);
    else rc = to_tensor(out, px, w, h, c);
    free(px);
    return rc;
}

/* TurboJPEG's message for the handle, without a trailing newline */
static const char *tj_message(tjhandle tj) {
    const char *m = tjGetErrorStr2(tj);
    return m && *m ? m : "unknown error";
}

static int load_jpeg(fnn_tensor *out, const char *path, const uint8_t *buf, size_t len) {
    tjhandle tj = tjInitDecompress();
    FNN_CHECK(tj, FNN_STATUS_OOM, "image.load: %s: TurboJPEG: %s", path, tjGetErrorStr2(NULL));
    int w = 0, h = 0, sub = 0, cs = 0;
    if (tjDecompressHeader3(tj, buf, (unsigned long)len, &w, &h, &sub, &cs) != 0) {
        int rc = FNN_FAIL(FNN_STATUS_IO, "image.load: %s: not a readable JPEG (TurboJPEG: %s)", path, tj_message(tj));
        tjDestroy(tj);
        return rc;
    }
    if (w <= 0 || h <= 0 || w > IMG_MAX_SIDE || h > IMG_MAX_SIDE || (int64_t)w * h > IMG_MAX_PIXELS) {
        tjDestroy(tj);
        return FNN_FAIL(FNN_STATUS_IO, "image.load: %s: JPEG size %dx%d outside what is read", path, w, h);
    }
    int grey = cs == TJCS_GRAY;
    int c = grey ? 1 : 3;
    uint8_t *px = malloc((size_t)w * h * c);
    if (!px) {
        tjDestroy(tj);
        return FNN_FAIL(FNN_STATUS_OOM, "image.load: %s: out of memory for %dx%d pixels", path, w, h);
    }
    /* a warning (a file that ends early, corrupt data) is an error too: the picture is not all there */
    if (tjDecompress2(tj, buf, (unsigned long)len, px, w, 0, h, grey ? TJPF_GRAY : TJPF_RGB, TJFLAG_STOPONWARNING) != 0) {
        int rc = FNN_FAIL(FNN_STATUS_IO, "image.load: %s: corrupt or truncated JPEG (TurboJPEG: %s)", path, tj_message(tj));
        free(px);
        tjDestroy(tj);
        return rc;
    }
    tjDestroy(tj);
    int rc = to_tensor(out, px, w, h, c);
    free(px);
    return rc;
}

int fnn_image_load(fnn_tensor *out, const char *path) {
    FNN_CHECK(out, FNN_STATUS_ARG, "image.load: no output tensor");
    FNN_CHECK(path && *path, FNN_STATUS_ARG, "image.load: no path given");
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = read_file(path, &buf, &len);
    if (rc) return rc;
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len == 0) rc = FNN_FAIL(FNN_STATUS_IO, "image.load: %s is empty (0 bytes)", path);
    else if (len >= 8 && memcmp(buf, png_sig, 8) == 0) rc = load_png(out, path);
    else if (len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF) rc = load_jpeg(out, path, buf, len);
    else rc = FNN_FAIL(FNN_STATUS_IO, "image.load: %s is neither a PNG nor a JPEG file (it starts with neither signature)", path);
    free(buf);
    return rc;
}

/* ---- checks shared by the operations ---- */

/* t is a CPU float32 picture: [C, H, W] with C >= 1, or [H, W] (one channel) */
static int check_image(const fnn_tensor *t, const char *op, int64_t *c, int64_t *h, int64_t *w) {
    FNN_CHECK(t && t->ndim >= 0 && !t->freed, FNN_STATUS_ARG, "%s: expected a tensor", op);
    FNN_CHECK(t->dtype == FNN_DTYPE_FLOAT32, FNN_STATUS_ARG, "%s: expected a float32 picture, got %s", op,
              fnn_dtype_name(t->dtype));
    FNN_CHECK(t->device == 0, FNN_STATUS_ARG, "%s: expected a picture on the CPU", op);
    FNN_CHECK(t->ndim == 3 || t->ndim == 2, FNN_STATUS_SHAPE, "%s: expected a picture [C,H,W] or [H,W], got %s", op,
              fnn_shape_of(t).s);
    *c = t->ndim == 3 ? t->shape[0] : 1;
    *h = t->shape[t->ndim - 2];
    *w = t->shape[t->ndim - 1];
    FNN_CHECK(*c >= 1 && *h >= 1 && *w >= 1, FNN_STATUS_SHAPE, "%s: empty picture %s", op, fnn_shape_of(t).s);
    return FNN_STATUS_OK;
}

/* element (k, y, x) of a picture checked by check_image, any strides */
static inline float at(const fnn_tensor *t, const float *base, int64_t k, int64_t y, int64_t x) {
    if (t->ndim == 3) return base[k * t->stride[0] + y * t->stride[1] + x * t->stride[2]];
    return base[y * t->stride[0] + x * t->stride[1]];
}

static int new_image(fnn_tensor *out, int64_t c, int64_t h, int64_t w, float **d) {
    int64_t shape[3] = {c, h, w};
    int rc = fnn_empty(out, 3, shape);
    if (rc) return rc;
    *d = fnn_tensor_mutable_data(out);
    return FNN_STATUS_OK;
}

static inline uint8_t to_byte(float v) {
    if (!(v > 0.0f)) return 0;        /* nan too */
    if (v >= 1.0f) return 255;
    return (uint8_t)lrintf(v * 255.0f);
}

static int ends_with(const char *s, const char *ext) {
    size_t n = strlen(s), m = strlen(ext);
    return n >= m && strcasecmp(s + n - m, ext) == 0;
}

static int write_jpeg(const char *path, const uint8_t *px, int w, int h, int c, int quality) {
    tjhandle tj = tjInitCompress();
    FNN_CHECK(tj, FNN_STATUS_OOM, "image.save: %s: TurboJPEG: %s", path, tjGetErrorStr2(NULL));
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    if (tjCompress2(tj, px, w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, &jpeg, &size, c == 1 ? TJSAMP_GRAY : TJSAMP_420,
                    quality, 0) != 0) {
        int rc = FNN_FAIL(FNN_STATUS_IO, "image.save: %s: TurboJPEG: %s", path, tj_message(tj));
        tjFree(jpeg);
        tjDestroy(tj);
        return rc;
    }
    tjDestroy(tj);
    int rc = FNN_STATUS_OK;
    FILE *f = fopen(path, "wb");
    if (!f) rc = FNN_FAIL(FNN_STATUS_IO, "image.save: cannot open %s for writing: %s", path, strerror(errno));
    else {
        size_t put = fwrite(jpeg, 1, size, f);
        if (fclose(f) != 0 || put != size) rc = FNN_FAIL(FNN_STATUS_IO, "image.save: cannot write %s", path);
    }
    tjFree(jpeg);
    return rc;
}

int fnn_image_save(const char *path, const fnn_tensor *t, int quality) {
    FNN_CHECK(path && *path, FNN_STATUS_ARG, "image.save: no path given");
    int64_t c, h, w;
    int rc = check_image(t, "image.save", &c, &h, &w);
    if (rc) return rc;
    FNN_CHECK(c == 1 || c == 3, FNN_STATUS_SHAPE, "image.save: %s: expected 1 (grey) or 3 (RGB) channels, got %s",
              path, fnn_shape_of(t).s);
    FNN_CHECK(h <= IMG_MAX_SIDE && w <= IMG_MAX_SIDE, FNN_STATUS_SHAPE, "image.save: %s: %s is too large", path,
              fnn_shape_of(t).s);
    FNN_CHECK(quality >= 1 && quality <= 100, FNN_STATUS_ARG, "image.save: quality %d outside 1..100", quality);
    int jpeg = ends_with(path, ".jpg") || ends_with(path, ".jpeg");
    FNN_CHECK(jpeg || ends_with(path, ".png"), FNN_STATUS_ARG,
              "image.save: %s: the extension must be .png, .jpg or .jpeg", path);
    uint8_t *px = malloc((size_t)(c * h * w));
    FNN_CHECK(px, FNN_STATUS_OOM, "image.save: %s: out of memory", path);
    const float *base = fnn_tensor_data(t);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            for (int64_t k = 0; k < c; k++) px[(y * w + x) * c + k] = to_byte(at(t, base, k, y, x));
    if (jpeg) rc = write_jpeg(path, px, (int)w, (int)h, (int)c, quality);
    else if (fnn_png_write(path, (int)w, (int)h, (int)c, px) != 0) {
        char msg[1024];   /* copied out of the error slot before a new one is written over it */
        snprintf(msg, sizeof msg, "%s", fnn_last_error());
        rc = FNN_FAIL(FNN_STATUS_IO, "image.save: %s", msg);
    }
    free(px);
    return rc;
}

/* ---- resize: separable triangle filter (bilinear), widened by the scale when shrinking ---- */

/* for each of n_out positions: the first input index, the count, and count weights (summing to 1).
 * Output pixel i's centre maps to (i + 0.5) * in / out in input coordinates; the filter is the
 * triangle of half-width max(1, in / out), so enlarging is plain bilinear (half-pixel centres,
 * edges clamped) and shrinking averages every input pixel it covers (antialiased). */
typedef struct { int64_t *first; int *count; float *wt; int max; } axis_weights;

static void free_axis(axis_weights *a) { free(a->first); free(a->count); free(a->wt); }

static int make_axis(axis_weights *a, int64_t in, int64_t out) {
    double scale = (double)in / (double)out;
    double support = scale > 1.0 ? scale : 1.0;
    int max = (int)ceil(support) * 2 + 1;
    a->max = max;
    a->first = malloc(sizeof(int64_t) * (size_t)out);
    a->count = malloc(sizeof(int) * (size_t)out);
    a->wt = malloc(sizeof(float) * (size_t)out * (size_t)max);
    if (!a->first || !a->count || !a->wt) { free_axis(a); return -1; }
    for (int64_t i = 0; i < out; i++) {
        double centre = (i + 0.5) * scale;
        int64_t lo = (int64_t)floor(centre - support + 0.5), hi = (int64_t)floor(centre + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in) hi = in;
        if (hi - lo > max) hi = lo + max;
        double sum = 0;
        float *dst = a->wt + i * max;
        int n = 0;
        for (int64_t j = lo; j < hi; j++, n++) {
            double d = fabs((j + 0.5 - centre) / support);
            dst[n] = (float)(d < 1.0 ? 1.0 - d : 0.0);
            sum += dst[n];
        }
        if (sum <= 0) {   /* cannot happen for in, out >= 1; kept so a weight table is never empty */
            lo = (int64_t)floor(centre);
            if (lo >= in) lo = in - 1;
            n = 1;
            dst[0] = 1;
        } else {
            for (int k = 0; k < n; k++) dst[k] = (float)(dst[k] / sum);
        }
        a->first[i] = lo;
        a->count[i] = n;
    }
    return 0;
}

int fnn_image_resize(fnn_tensor *out, const fnn_tensor *x, int64_t oh, int64_t ow) {
    int64_t c, h, w;
    int rc = check_image(x, "image.resize", &c, &h, &w);
    if (rc) return rc;
    FNN_CHECK(oh >= 1 && ow >= 1 && oh <= IMG_MAX_SIDE && ow <= IMG_MAX_SIDE, FNN_STATUS_ARG,
              "image.resize: size %lldx%lld outside 1..%d", (long long)oh, (long long)ow, IMG_MAX_SIDE);
    axis_weights ax = {0}, ay = {0};
    float *tmp = malloc(sizeof(float) * (size_t)(c * h * ow));
    if (!tmp || make_axis(&ax, w, ow) != 0 || make_axis(&ay, h, oh) != 0) {
        free(tmp); free_axis(&ax); free_axis(&ay);
        return FNN_FAIL(FNN_STATUS_OOM, "image.resize: out of memory");
    }
    float *d;
    rc = new_image(out, c, oh, ow, &d);
    if (rc) { free(tmp); free_axis(&ax); free_axis(&ay); return rc; }
    const float *base = fnn_tensor_data(x);
    for (int64_t k = 0; k < c; k++)
        for (int64_t y = 0; y < h; y++)
            for (int64_t i = 0; i < ow; i++) {
                const float *wt = ax.wt + i * ax.max;
                float s = 0;
                for (int j = 0; j < ax.count[i]; j++) s += wt[j] * at(x, base, k, y, ax.first[i] + j);
                tmp[(k * h + y) * ow + i] = s;
            }
    for (int64_t k = 0; k < c; k++)
        for (int64_t i = 0; i < oh; i++) {
            const float *wt = ay.wt + i * ay.max;
            float *row = d + (k * oh + i) * ow;
            for (int64_t xx = 0; xx < ow; xx++) row[xx] = 0;
            for (int j = 0; j < ay.count[i]; j++) {
                const float *src = tmp + (k * h + ay.first[i] + j) * ow;
                for (int64_t xx = 0; xx < ow; xx++) row[xx] += wt[j] * src[xx];
            }
        }
    free(tmp);
    free_axis(&ax);
    free_axis(&ay);
    return FNN_STATUS_OK;
}

/* out = x[:, top : top + h, left : left + w] (0-based), a copy */
int fnn_image_crop(fnn_tensor *out, const fnn_tensor *x, int64_t top, int64_t left, int64_t ch, int64_t cw) {
    int64_t c, h, w;
    int rc = check_image(x, "image.crop", &c, &h, &w);
    if (rc) return rc;
    FNN_CHECK(ch >= 1 && cw >= 1 && top >= 0 && left >= 0 && top + ch <= h && left + cw <= w, FNN_STATUS_ARG,
              "image.crop: the box %lldx%lld at (x %lld, y %lld) is not inside the %lldx%lld picture", (long long)cw,
              (long long)ch, (long long)left, (long long)top, (long long)w, (long long)h);
    float *d;
    rc = new_image(out, c, ch, cw, &d);
    if (rc) return rc;
    const float *base = fnn_tensor_data(x);
    for (int64_t k = 0; k < c; k++)
        for (int64_t y = 0; y < ch; y++)
            for (int64_t i = 0; i < cw; i++) *d++ = at(x, base, k, top + y, left + i);
    return FNN_STATUS_OK;
}

/* out = x mirrored left to right */
int fnn_image_hflip(fnn_tensor *out, const fnn_tensor *x) {
    int64_t c, h, w;
    int rc = check_image(x, "image.hflip", &c, &h, &w);
    if (rc) return rc;
    float *d;
    rc = new_image(out, c, h, w, &d);
    if (rc) return rc;
    const float *base = fnn_tensor_data(x);
    for (int64_t k = 0; k < c; k++)
        for (int64_t y = 0; y < h; y++)
            for (int64_t i = 0; i < w; i++) *d++ = at(x, base, k, y, w - 1 - i);
    return FNN_STATUS_OK;
}

/* out: [1, H, W], 0.299 R + 0.587 G + 0.114 B (ITU-R 601, as torchvision); one channel is copied */
int fnn_image_to_gray(fnn_tensor *out, const fnn_tensor *x) {
    int64_t c, h, w;
    int rc = check_image(x, "image.to_gray", &c, &h, &w);
    if (rc) return rc;
    FNN_CHECK(c == 1 || c == 3, FNN_STATUS_SHAPE, "image.to_gray: expected 1 or 3 channels, got %s", fnn_shape_of(x).s);
    float *d;
    rc = new_image(out, 1, h, w, &d);
    if (rc) return rc;
    const float *base = fnn_tensor_data(x);
    for (int64_t y = 0; y < h; y++)
        for (int64_t i = 0; i < w; i++)
            *d++ = c == 1 ? at(x, base, 0, y, i)
                          : 0.299f * at(x, base, 0, y, i) + 0.587f * at(x, base, 1, y, i) + 0.114f * at(x, base, 2, y, i);
    return FNN_STATUS_OK;
}
