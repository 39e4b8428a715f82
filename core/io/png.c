/* png.c: 8-bit PNG files through libpng, for fastnn.plot's pictures and the specs that read them.
 * defines: fnn_png_write (atomic: a temporary file beside the target, then rename), fnn_png_read,
 * fnn_png_encode (into memory: TensorBoard's image summaries carry the PNG bytes; png.h).
 * libpng reports errors by longjmp; each setjmp sits in a small function of its own whose locals
 * do not change after it, so nothing is clobbered, and the message is kept for fnn_last_error. */
#include "internal.h"
#include "io/png.h"
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* what libpng's error callback leaves for us before it jumps back */
typedef struct { char msg[200]; } png_err;

static void on_error(png_structp png, png_const_charp msg) {
    png_err *e = (png_err *)png_get_error_ptr(png);
    /* libpng's own reader says only "Read Error" when the file ends early */
    if (msg && strcmp(msg, "Read Error") == 0) msg = "the file ends early (truncated?)";
    snprintf(e->msg, sizeof e->msg, "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}
static void on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

static atomic_ulong tmp_counter;

/* a growing byte buffer: where fnn_png_encode's bytes go; a failed growth is reported as libpng's error */
typedef struct { uint8_t *data; size_t len, cap; } png_mem;

static void mem_write(png_structp png, png_bytep bytes, png_size_t n) {
    png_mem *m = (png_mem *)png_get_io_ptr(png);
    if (m->len + n > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < m->len + n) cap *= 2;
        uint8_t *grown = realloc(m->data, cap);
        if (!grown) png_error(png, "out of memory");
        m->data = grown;
        m->cap = cap;
    }
    memcpy(m->data + m->len, bytes, n);
    m->len += n;
}
static void mem_flush(png_structp png) { (void)png; }

/* the encoding itself, into f or (f NULL) into mem; 0, or -1 with e->msg set by libpng */
static int encode(FILE *f, png_mem *mem, png_err *e, int width, int height, int channels, const uint8_t *pixels) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, on_error, on_warning);
    if (!png) { snprintf(e->msg, sizeof e->msg, "out of memory"); return -1; }
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_write_struct(&png, NULL); snprintf(e->msg, sizeof e->msg, "out of memory"); return -1; }
    if (setjmp(png_jmpbuf(png))) { png_destroy_write_struct(&png, &info); return -1; }
    static const int color[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                 PNG_COLOR_TYPE_RGB_ALPHA};
    if (f) png_init_io(png, f);
    else png_set_write_fn(png, mem, mem_write, mem_flush);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, color[channels], PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * width * channels);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

/* path <- a width x height image of 8-bit pixels: channels 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA),
 * rows top first, each width * channels bytes */
int fnn_png_write(const char *path, int width, int height, int channels, const uint8_t *pixels) {
    FNN_CHECK(path && *path, FNN_STATUS_ARG, "png: no path given");
    FNN_CHECK(pixels, FNN_STATUS_ARG, "png: %s: no pixels given", path);
    FNN_CHECK(width > 0 && height > 0 && width <= 1 << 16 && height <= 1 << 16, FNN_STATUS_ARG,
              "png: %s: size %dx%d outside 1..65536", path, width, height);
    FNN_CHECK(channels >= 1 && channels <= 4, FNN_STATUS_ARG, "png: %s: %d channels (expected 1..4)", path, channels);
    size_t tlen = strlen(path) + 64;
    char *tmp = malloc(tlen);
    FNN_CHECK(tmp, FNN_STATUS_OOM, "png: %s: out of memory", path);
    snprintf(tmp, tlen, "%s.tmp.%ld.%lu", path, (long)getpid(), (unsigned long)atomic_fetch_add(&tmp_counter, 1));
    int rc = FNN_STATUS_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        rc = FNN_FAIL(FNN_STATUS_IO, "png: cannot open %s for writing: %s", path, strerror(errno));
        free(tmp);
        return rc;
    }
    png_err e = {{0}};
    if (encode(f, NULL, &e, width, height, channels, pixels) != 0) {
        rc = FNN_FAIL(FNN_STATUS_IO, "png: %s: libpng: %s", path, e.msg);
        fclose(f);
    } else if (fflush(f) != 0 || ferror(f)) {
        rc = FNN_FAIL(FNN_STATUS_IO, "png: cannot write %s: %s", path, strerror(errno));
        fclose(f);
    } else if (fclose(f) != 0) {
        rc = FNN_FAIL(FNN_STATUS_IO, "png: cannot write %s: %s", path, strerror(errno));
    } else if (rename(tmp, path) != 0) {
        rc = FNN_FAIL(FNN_STATUS_IO, "png: cannot replace %s: %s", path, strerror(errno));
    }
    if (rc) unlink(tmp);
    free(tmp);
    return rc;
}

/* *out (malloc'ed, *len bytes; the caller frees it) <- the PNG file of a width x height image, as fnn_png_write */
int fnn_png_encode(uint8_t **out, size_t *len, int width, int height, int channels, const uint8_t *pixels) {
    FNN_CHECK(out && len && pixels, FNN_STATUS_ARG, "png: no pixels or no place for the bytes");
    FNN_CHECK(width > 0 && height > 0 && width <= 1 << 16 && height <= 1 << 16, FNN_STATUS_ARG,
              "png: size %dx%d outside 1..65536", width, height);
    FNN_CHECK(channels >= 1 && channels <= 4, FNN_STATUS_ARG, "png: %d channels (expected 1..4)", channels);
    png_mem mem = {NULL, 0, 0};
    png_err e = {{0}};
    if (encode(NULL, &mem, &e, width, height, channels, pixels) != 0) {
        free(mem.data);
        return FNN_FAIL(FNN_STATUS_IO, "png: libpng: %s", e.msg);
    }
    *out = mem.data;
    *len = mem.len;
    return FNN_STATUS_OK;
}

/* the decoding: header into *w, *h, *c (8-bit, palette and low depths expanded, 16-bit stripped);
 * rows into pixels when it is not NULL and cap holds them. 0, or -1 with e->msg set */
static int decode(FILE *f, png_err *e, int *w, int *h, int *c, uint8_t *pixels, int64_t cap) {
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, e, on_error, on_warning);
    if (!png) { snprintf(e->msg, sizeof e->msg, "out of memory"); return -1; }
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_read_struct(&png, NULL, NULL); snprintf(e->msg, sizeof e->msg, "out of memory"); return -1; }
    png_bytep *volatile rows = NULL;   /* volatile: set after setjmp, freed when libpng jumps back */
    if (setjmp(png_jmpbuf(png))) { free(rows); png_destroy_read_struct(&png, &info, NULL); return -1; }
    png_init_io(png, f);
    png_read_info(png, info);
    png_set_expand(png);       /* palette -> RGB, grey < 8 bits -> 8 bits, tRNS -> alpha */
    png_set_strip_16(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    *w = (int)png_get_image_width(png, info);
    *h = (int)png_get_image_height(png, info);
    *c = (int)png_get_channels(png, info);
    int64_t row = (int64_t)png_get_rowbytes(png, info);
    if (pixels && cap >= row * *h && row == (int64_t)*w * *c) {
        rows = malloc(sizeof(png_bytep) * (size_t)*h);
        if (!rows) { png_destroy_read_struct(&png, &info, NULL); snprintf(e->msg, sizeof e->msg, "out of memory"); return -1; }
        for (int y = 0; y < *h; y++) rows[y] = pixels + (size_t)y * (size_t)row;
        png_read_image(png, rows);
        png_read_end(png, NULL);
        free(rows);
        rows = NULL;
    }
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}

/* read path's header (pixels NULL) or the whole image into pixels (cap bytes, at least w * h * c):
 * *width, *height, *channels (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA), 8 bits each */
int fnn_png_read(const char *path, int *width, int *height, int *channels, uint8_t *pixels, int64_t cap) {
    FNN_CHECK(path && *path, FNN_STATUS_ARG, "png: no path given");
    FNN_CHECK(width && height && channels, FNN_STATUS_ARG, "png: %s: no place for the size", path);
    FILE *f = fopen(path, "rb");
    FNN_CHECK(f, FNN_STATUS_IO, "png: cannot open %s: %s", path, strerror(errno));
    uint8_t sig[8];
    size_t got = fread(sig, 1, 8, f);
    if (got != 8 || png_sig_cmp(sig, 0, 8) != 0) {
        fclose(f);
        return FNN_FAIL(FNN_STATUS_IO, "png: %s is not a PNG file (bad signature)", path);
    }
    rewind(f);
    png_err e = {{0}};
    int w = 0, h = 0, c = 0;
    int r = decode(f, &e, &w, &h, &c, pixels, cap);
    fclose(f);
    FNN_CHECK(r == 0, FNN_STATUS_IO, "png: %s: libpng: %s", path, e.msg);
    FNN_CHECK(!pixels || cap >= (int64_t)w * h * c, FNN_STATUS_ARG, "png: %s: %dx%dx%d needs %lld bytes, buffer holds %lld",
              path, w, h, c, (long long)w * h * c, (long long)cap);
    *width = w;
    *height = h;
    *channels = c;
    return FNN_STATUS_OK;
}
