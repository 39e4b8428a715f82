/* text.c: character-level text data. Text of any size becomes one int64 tensor of 1-based token
 * ids without a Lua value per character:
 *   fnn_text_encode / fnn_text_encode_file: UTF-8 text -> ids [N] and its vocabulary [V] (the
 *       distinct code points, ascending, so id k is the k-th smallest character), or ids under
 *       a given vocabulary; `bytes` makes every byte a token instead (any file, no decoding)
 *   fnn_text_decode: ids -> UTF-8 (or raw bytes)
 *   fnn_take_windows: batches of windows for next-token prediction
 * Decoding is strict UTF-8 (no overlongs, surrogates or values past U+10FFFF): a file that is not
 * UTF-8 is refused at the first bad byte, with its offset, rather than silently mangled. */
#include "internal.h"
#include "batch.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_CODE_POINT = 0x10FFFF, CODE_POINTS = MAX_CODE_POINT + 1 };

/* the code point at s[*pos] (advancing *pos), or -1 at an invalid sequence (pos unchanged) */
static inline int32_t next_code_point(const unsigned char *s, int64_t len, int64_t *pos) {
    int64_t i = *pos;
    unsigned c = s[i];
    if (c < 0x80) { *pos = i + 1; return (int32_t)c; }
    int n;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; min = 0x10000; }
    else return -1;
    if (i + n >= len) return -1;   /* the sequence runs past the end */
    for (int k = 1; k <= n; k++) {
        unsigned d = s[i + k];
        if ((d & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (d & 0x3F);
    }
    if (cp < min || cp > MAX_CODE_POINT || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    *pos = i + n + 1;
    return (int32_t)cp;
}

/* a code point as UTF-8 into out (4 bytes room); returns the byte count */
static inline int put_utf8(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12); out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18); out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int invalid_utf8(const char *name, const unsigned char *s, int64_t pos) {
    return FNN_FAIL(FNN_STATUS_IO,
                    "text_encode: %s: invalid UTF-8 at byte %lld (0x%02x); pass {bytes = true} for a byte vocabulary",
                    name, (long long)pos + 1, s[pos]);
}

/* text -> ids [N] under map (code point -> 1-based id, 0 unknown); vocab is the map's source */
static int encode_with_map(fnn_tensor *ids, const unsigned char *s, int64_t len, const int32_t *map, int bytes,
                           int64_t count, const char *name) {
    int64_t shape[1] = {count};
    FNN_TRY(fnn_new_output_dtype(ids, fnn_make_device(FNN_DEVICE_CPU, 0), FNN_DTYPE_INT64, 1, shape));
    int64_t *y = fnn_data_i64(ids);
    int64_t pos = 0, k = 0;
    while (pos < len) {
        int64_t at = pos;
        int32_t cp = bytes ? (int32_t)s[pos++] : next_code_point(s, len, &pos);
        if (cp < 0) { fnn_tensor_clear(ids); return invalid_utf8(name, s, at); }
        int32_t id = map[cp];
        if (id == 0) {
            char ch[5] = {0};
            if (bytes || cp < 0x20) snprintf(ch, sizeof ch, "?");
            else put_utf8((uint32_t)cp, ch);
            fnn_tensor_clear(ids);
            return FNN_FAIL(FNN_STATUS_ARG, "text_encode: %s: character '%s' (U+%04X) at byte %lld is not in the vocabulary",
                            name, ch, (unsigned)cp, (long long)at + 1);
        }
        y[k++] = id;
    }
    return FNN_STATUS_OK;
}

/* vocabulary [V] int64 of code points (or bytes) -> map, checking it */
static int map_of_vocab(const fnn_tensor *vocab, int32_t *map, int bytes) {
    FNN_TRY(fnn_check_input_any("text_encode", vocab));
    FNN_CHECK(vocab->dtype == FNN_DTYPE_INT64 && vocab->ndim == 1, FNN_STATUS_ARG,
              "text_encode: a vocabulary is a 1-D int64 tensor of code points, got %s %s",
              fnn_dtype_name(vocab->dtype), fnn_shape_of(vocab).s);
    int64_t v = vocab->shape[0];
    FNN_CHECK(v < INT32_MAX, FNN_STATUS_ARG, "text_encode: vocabulary of %lld entries", (long long)v);
    const int64_t *cps = fnn_data_i64(vocab);
    int64_t step = vocab->stride[0];
    int32_t limit = bytes ? 255 : MAX_CODE_POINT;
    for (int64_t i = 0; i < v; i++) {
        int64_t cp = cps[i * step];
        FNN_CHECK(cp >= 0 && cp <= limit, FNN_STATUS_ARG, "text_encode: vocabulary entry %lld is %lld, not a %s",
                  (long long)i + 1, (long long)cp, bytes ? "byte" : "code point");
        FNN_CHECK(map[cp] == 0, FNN_STATUS_ARG, "text_encode: vocabulary entry %lld (%lld) repeats entry %d",
                  (long long)i + 1, (long long)cp, map[cp]);
        map[cp] = (int32_t)(i + 1);
    }
    return FNN_STATUS_OK;
}

static int encode(fnn_tensor *ids, fnn_tensor *vocab, const unsigned char *s, int64_t len,
                  const fnn_tensor *given, int bytes, const char *name) {
    fnn_tensor_init(ids);
    if (vocab) fnn_tensor_init(vocab);
    FNN_CHECK(len >= 0 && (len == 0 || s), FNN_STATUS_ARG, "text_encode: %lld bytes of text", (long long)len);
    FNN_CHECK(given || vocab, FNN_STATUS_ARG, "text_encode: expected a vocabulary or a header for one");
    size_t map_len = bytes ? 256 : CODE_POINTS;
    int32_t *map = calloc(map_len, sizeof(int32_t));   /* 4.4 MB for all of Unicode: small beside the ids */
    FNN_CHECK(map != NULL, FNN_STATUS_OOM, "text_encode: out of memory");
    int rc = FNN_STATUS_OK;
    int64_t count = 0;
    if (given) {
        rc = map_of_vocab(given, map, bytes);
        if (rc == FNN_STATUS_OK) {
            if (bytes) count = len;
            else
                for (int64_t pos = 0; pos < len && rc == FNN_STATUS_OK; count++) {
                    int64_t at = pos;
                    if (next_code_point(s, len, &pos) < 0) rc = invalid_utf8(name, s, at);
                }
        }
    } else {
        /* pass 1: which characters occur, and how many there are */
        size_t top = 0;   /* past the largest code point seen: the scans below stop there (a short
                           * ASCII text then touches one page of the map, not all 4.4 MB) */
        for (int64_t pos = 0; pos < len; count++) {
            int64_t at = pos;
            int32_t cp = bytes ? (int32_t)s[pos++] : next_code_point(s, len, &pos);
            if (cp < 0) { rc = invalid_utf8(name, s, at); break; }
            map[cp] = 1;
            if ((size_t)cp >= top) top = (size_t)cp + 1;
        }
        map_len = top;
        if (rc == FNN_STATUS_OK) {
            int64_t v = 0;
            for (size_t cp = 0; cp < map_len; cp++) if (map[cp]) v++;
            int64_t shape[1] = {v};
            rc = fnn_new_output_dtype(vocab, fnn_make_device(FNN_DEVICE_CPU, 0), FNN_DTYPE_INT64, 1, shape);
            if (rc == FNN_STATUS_OK) {
                int64_t *out = fnn_data_i64(vocab);
                int32_t id = 0;
                for (size_t cp = 0; cp < map_len; cp++)
                    if (map[cp]) { out[id] = (int64_t)cp; map[cp] = ++id; }
            }
        }
    }
    /* pass 2: the ids */
    if (rc == FNN_STATUS_OK) rc = encode_with_map(ids, s, len, map, bytes, count, name);
    free(map);
    if (rc != FNN_STATUS_OK && vocab) fnn_tensor_clear(vocab);
    return rc;
}

int fnn_text_encode(fnn_tensor *ids, fnn_tensor *vocab, const char *text, int64_t len, const fnn_tensor *given,
                    int bytes) {
    FNN_CHECK(ids != NULL, FNN_STATUS_ARG, "text_encode: expected an ids header");
    return encode(ids, vocab, (const unsigned char *)text, len, given, bytes, "text");
}

int fnn_text_encode_file(fnn_tensor *ids, fnn_tensor *vocab, const char *path, const fnn_tensor *given, int bytes) {
    FNN_CHECK(ids != NULL, FNN_STATUS_ARG, "text_encode: expected an ids header");
    fnn_tensor_init(ids);
    if (vocab) fnn_tensor_init(vocab);
    FNN_CHECK(path != NULL, FNN_STATUS_ARG, "text_encode: expected a path");
    errno = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FNN_CHECK(fd >= 0, FNN_STATUS_IO, "text_encode: %s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return FNN_FAIL(FNN_STATUS_IO, "text_encode: %s: not a regular file%s%s", path, e ? ": " : "", e ? strerror(e) : "");
    }
    int64_t len = (int64_t)st.st_size;
    if (len == 0) {
        close(fd);
        return encode(ids, vocab, NULL, 0, given, bytes, path);
    }
    /* mapped, not read: the kernel pages the file through once per pass, nothing is copied */
    void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    FNN_CHECK(m != MAP_FAILED, FNN_STATUS_IO, "text_encode: %s: cannot map %lld bytes (%s)", path, (long long)len,
              strerror(e));
    (void)madvise(m, (size_t)len, MADV_SEQUENTIAL);
    int rc = encode(ids, vocab, m, len, given, bytes, path);
    munmap(m, (size_t)len);
    return rc;
}

int fnn_text_decode(const fnn_tensor *vocab, const fnn_tensor *ids, int bytes, char *buf, int64_t cap, int64_t *len) {
    FNN_CHECK(vocab && ids && len, FNN_STATUS_ARG, "text_decode: expected a vocabulary, ids and a length");
    *len = 0;
    FNN_TRY(fnn_check_input_any("text_decode", vocab));
    FNN_TRY(fnn_check_index("text_decode", "ids", ids));
    FNN_CHECK(vocab->dtype == FNN_DTYPE_INT64 && vocab->ndim == 1, FNN_STATUS_ARG,
              "text_decode: a vocabulary is a 1-D int64 tensor of code points, got %s %s",
              fnn_dtype_name(vocab->dtype), fnn_shape_of(vocab).s);
    FNN_CHECK(fnn_device_type_of(ids->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "text_decode: ids must be on the cpu");
    fnn_tensor tmp;
    fnn_tensor_init(&tmp);
    int rc = FNN_STATUS_OK;
    const void *raw = fnn_contiguous_bytes(ids, &tmp, &rc);
    if (rc != FNN_STATUS_OK) return rc;
    int64_t n = fnn_tensor_numel(ids), v = vocab->shape[0], pos = 0;
    const int64_t *cps = fnn_data_i64(vocab);
    for (int64_t i = 0; i < n; i++) {
        int64_t id;
        if (ids->dtype == FNN_DTYPE_INT64) {
            id = ((const int64_t *)raw)[i];
        } else {
            float f = ((const float *)raw)[i];
            id = (int64_t)f;
            if ((float)id != f) {
                rc = FNN_FAIL(FNN_STATUS_ARG, "text_decode: id %lld of %s is %g, not a whole number", (long long)i + 1,
                              fnn_shape_of(ids).s, f);
                break;
            }
        }
        if (id < 1 || id > v) {
            rc = FNN_FAIL(FNN_STATUS_ARG, "text_decode: id %lld (element %lld of %s) outside 1..%lld", (long long)id,
                          (long long)i + 1, fnn_shape_of(ids).s, (long long)v);
            break;
        }
        int64_t cp = cps[(id - 1) * vocab->stride[0]];
        if (cp < 0 || cp > (bytes ? 255 : MAX_CODE_POINT)) {
            rc = FNN_FAIL(FNN_STATUS_ARG, "text_decode: vocabulary entry %lld is %lld, not a %s", (long long)id,
                          (long long)cp, bytes ? "byte" : "code point");
            break;
        }
        char ch[4];
        int k = bytes ? (ch[0] = (char)cp, 1) : put_utf8((uint32_t)cp, ch);
        if (buf && pos + k <= cap) memcpy(buf + pos, ch, (size_t)k);
        pos += k;
    }
    fnn_tensor_clear(&tmp);
    if (rc != FNN_STATUS_OK) return rc;
    *len = pos;
    FNN_CHECK(buf == NULL || pos <= cap, FNN_STATUS_ARG, "text_decode: %lld bytes do not fit in %lld", (long long)pos,
              (long long)cap);
    return FNN_STATUS_OK;
}

/* ---- windows: tokens [N] int64; window i (1-based) starts at (i - 1) * stride ----
 * inputs [n, context] = tokens[s .. s + context - 1], targets [n, context] = tokens[s + 1 .. s + context] */
int fnn_take_windows_check(const fnn_tensor *tokens, int64_t context, int64_t stride, int64_t n, const int64_t *ids) {
    FNN_TRY(fnn_check_input_any("take_windows", tokens));
    FNN_CHECK(tokens->dtype == FNN_DTYPE_INT64 && tokens->ndim == 1 && (tokens->stride[0] == 1 || tokens->shape[0] <= 1),
              FNN_STATUS_ARG, "take_windows: tokens must be a contiguous 1-D int64 tensor, got %s %s",
              fnn_dtype_name(tokens->dtype), fnn_shape_of(tokens).s);
    FNN_CHECK(fnn_device_type_of(tokens->device) == FNN_DEVICE_CPU, FNN_STATUS_DEVICE,
              "take_windows: tokens must be on the cpu");
    FNN_CHECK(context >= 1 && stride >= 1, FNN_STATUS_ARG, "take_windows: context %lld and stride %lld must be >= 1",
              (long long)context, (long long)stride);
    FNN_CHECK(n >= 0 && (n == 0 || ids), FNN_STATUS_ARG, "take_windows: %lld ids but no id array", (long long)n);
    int64_t total = tokens->shape[0];
    int64_t windows = total > context ? (total - context - 1) / stride + 1 : 0;
    for (int64_t i = 0; i < n; i++)
        FNN_CHECK(ids[i] >= 1 && ids[i] <= windows, FNN_STATUS_ARG,
                  "take_windows: window %lld outside 1..%lld (%lld tokens, context %lld, stride %lld)",
                  (long long)ids[i], (long long)windows, (long long)total, (long long)context, (long long)stride);
    return FNN_STATUS_OK;
}

void fnn_take_windows_write(int64_t *x, int64_t *y, const fnn_tensor *tokens, int64_t context, int64_t stride,
                            int64_t n, const int64_t *ids) {
    const int64_t *t = fnn_data_i64(tokens);
    size_t row = sizeof(int64_t) * (size_t)context;
    for (int64_t i = 0; i < n; i++) {
        const int64_t *w = t + (ids[i] - 1) * stride;
        memcpy(x + i * context, w, row);
        memcpy(y + i * context, w + 1, row);
    }
}

int fnn_take_windows(fnn_tensor *inputs, fnn_tensor *targets, const fnn_tensor *tokens, int64_t context,
                     int64_t stride, int64_t n, const int64_t *ids) {
    FNN_CHECK(inputs && targets && tokens, FNN_STATUS_ARG, "take_windows: expected two headers and the tokens");
    fnn_tensor_init(inputs);
    fnn_tensor_init(targets);
    FNN_TRY(fnn_take_windows_check(tokens, context, stride, n, ids));
    int64_t shape[2] = {n, context};
    int dev = fnn_make_device(FNN_DEVICE_CPU, 0);
    FNN_TRY(fnn_new_output_dtype(inputs, dev, FNN_DTYPE_INT64, 2, shape));
    int rc = fnn_new_output_dtype(targets, dev, FNN_DTYPE_INT64, 2, shape);
    if (rc != FNN_STATUS_OK) { fnn_tensor_clear(inputs); return rc; }
    fnn_take_windows_write(fnn_data_i64(inputs), fnn_data_i64(targets), tokens, context, stride, n, ids);
    return FNN_STATUS_OK;
}
