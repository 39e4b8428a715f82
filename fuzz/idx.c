/* fuzz/idx.c: the IDX reader (fnn_read_idx, zlib: plain and gzip files).
 * Input: one mode byte, then the file. Mode bit 0 set: the harness gzips the rest first, so the
 * mutations reach the IDX header behind a valid gzip stream; clear: the bytes are the file as they
 * are (plain IDX, or a real .gz whose stream the mutations corrupt). */
#include "common.h"
#include <zlib.h>

static unsigned char *gzip(const uint8_t *data, size_t size, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, size) + 32;
    unsigned char *out = malloc(cap);
    FUZZ_ASSERT(out, "idx: out of memory");
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)size;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    FUZZ_ASSERT(deflate(&z, Z_FINISH) == Z_STREAM_END, "idx: deflate");
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0] & 1;
    data++, size--;
    size_t len = size;
    unsigned char *packed = mode ? gzip(data, size, &len) : NULL;
    const char *path = fuzz_file(packed ? packed : data, len);
    free(packed);
    fnn_tensor t;
    if (fnn_read_idx(&t, path, 1.0 / 255) != FNN_STATUS_OK) {
        fuzz_expect_error("idx", "read_idx: ");
        return 0;
    }
    /* a tensor came back: its shape is the header's, every value a byte / 255 */
    FUZZ_ASSERT(t.ndim >= 1 && t.ndim <= FNN_MAX_DIMS && t.dtype == FNN_DTYPE_FLOAT32, "idx: bad header %d", t.ndim);
    int64_t n = fnn_tensor_numel(&t);
    if (mode) FUZZ_ASSERT(4 + 4 * (size_t)t.ndim + (size_t)n <= size, "idx: %lld values from %zu bytes", (long long)n, size);
    const float *y = fnn_tensor_data(&t);
    for (int64_t i = 0; i < n; i++) FUZZ_ASSERT(y[i] >= 0 && y[i] <= 1, "idx: value %g", y[i]);
    fnn_tensor_clear(&t);
    fnn_empty_cache();
    return 0;
}
