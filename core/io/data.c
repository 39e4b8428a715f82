/* data.c: loading and batching. fnn_read_idx reads the IDX format (MNIST,
 * Fashion-MNIST) through zlib, which reads gzipped and plain files alike;
 * fnn_take_rows gathers the rows of a batch with one memcpy per row. Input
 * from outside is untrusted: every header field and every short read is
 * checked and reported with the file's name, never trusted into a crash. */
#include "internal.h"
#include "ops/index.h"
#include "batch.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- IDX: big-endian header 0x00 0x00 <type> <ndims>, ndims u32 sizes, then the data ---- */

enum { IDX_UBYTE = 0x08, IDX_CHUNK = 1 << 20 };

/* read up to len bytes; returns how many were read (fewer at the end of the data, also when a
 * gzip stream is cut short), or -1 on any other error (corrupt stream, I/O) */
static int64_t read_full(gzFile f, unsigned char *buf, int64_t len) {
    int64_t got = 0;
    while (got < len) {
        int64_t want = len - got < IDX_CHUNK ? len - got : IDX_CHUNK;
        int r = gzread(f, buf + got, (unsigned)want);
        if (r < 0) {
            int err = 0;
            gzerror(f, &err);
            if (err == Z_BUF_ERROR) break;   /* "unexpected end of file": truncated */
            return -1;
        }
        if (r == 0) break;
        got += r;
    }
    return got;
}

static int gz_failure(gzFile f, const char *path, const char *what) {
    int err = 0;
    const char *msg = gzerror(f, &err);
    return FNN_FAIL(FNN_STATUS_IO, "read_idx: %s: %s (%s)", path, what,
                    err == Z_ERRNO ? strerror(errno) : msg);
}

/* A loader gathers rows of a dataset in shuffled order: with 4 KB pages nearly every row costs a TLB
 * miss (60,000 Fashion-MNIST rows span 46,000 pages). Asking for transparent huge pages on the
 * dataset's buffer before it is first written made a shuffled epoch of gathers 1.5x faster here.
 * Only whole 2 MB pages inside the buffer are affected; a refusal (THP off) changes nothing. */
static void advise_huge_pages(void *p, int64_t bytes) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (bytes < (int64_t)(4 * huge)) return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + (uintptr_t)bytes) & ~(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p; (void)bytes;
#endif
}

/* out [dims...] = the file's unsigned bytes * scale, as float32; file_bytes: its size on disk */
static int read_idx_open(fnn_tensor *out, gzFile f, const char *path, double scale, int64_t file_bytes) {
    unsigned char head[4 + 4 * FNN_MAX_DIMS];
    int64_t got = read_full(f, head, 4);
    if (got < 0) return gz_failure(f, path, "cannot read the header");
    FNN_CHECK(got == 4, FNN_STATUS_IO, "read_idx: %s: truncated header (%lld of 4 bytes)", path, (long long)got);
    FNN_CHECK(head[0] == 0 && head[1] == 0, FNN_STATUS_IO,
              "read_idx: %s: bad magic 0x%02x%02x%02x%02x (not an IDX file)", path, head[0], head[1], head[2], head[3]);
    FNN_CHECK(head[2] == IDX_UBYTE, FNN_STATUS_IO,
              "read_idx: %s: data type 0x%02x not supported (only unsigned bytes, 0x08)", path, head[2]);
    int ndim = head[3];
    FNN_CHECK(ndim >= 1 && ndim <= FNN_MAX_DIMS, FNN_STATUS_IO, "read_idx: %s: %d dims in the header (1..%d supported)",
              path, ndim, FNN_MAX_DIMS);
    got = read_full(f, head + 4, 4 * ndim);
    if (got < 0) return gz_failure(f, path, "cannot read the header");
    FNN_CHECK(got == 4 * ndim, FNN_STATUS_IO, "read_idx: %s: truncated header (%lld of %d bytes of sizes)", path,
              (long long)got, 4 * ndim);
    int64_t shape[FNN_MAX_DIMS], total = 1, span = 1;
    for (int d = 0; d < ndim; d++) {
        const unsigned char *b = head + 4 + 4 * d;
        shape[d] = (int64_t)b[0] << 24 | (int64_t)b[1] << 16 | (int64_t)b[2] << 8 | (int64_t)b[3];
        /* a corrupted size must not turn into a huge allocation: cap the element count, and the
         * product of the nonzero sizes too (a size 0 makes the count 0, not the strides) */
        int64_t s = shape[d] > 0 ? shape[d] : 1;
        FNN_CHECK(span <= ((int64_t)1 << 36) / s, FNN_STATUS_IO,
                  "read_idx: %s: sizes %s in the header are implausibly large", path, fnn_shape_dims(d + 1, shape).s);
        span *= s;
        total *= shape[d];
    }
    /* the data must be able to exist before it is allocated for: a plain file holds it after the
     * header; a gzip stream inflates at most 1032:1 (deflate's limit), so a 20-byte file cannot
     * claim gigabytes */
    int64_t head_bytes = 4 + 4 * (int64_t)ndim;
    if (gzdirect(f))
        FNN_CHECK(total <= file_bytes - head_bytes, FNN_STATUS_IO,
                  "read_idx: %s: truncated, expected %lld bytes of data, got %lld (sizes %s)", path, (long long)total,
                  (long long)(file_bytes - head_bytes), fnn_shape_dims(ndim, shape).s);
    else
        FNN_CHECK(total + head_bytes <= file_bytes * 1032, FNN_STATUS_IO,
                  "read_idx: %s: sizes %s need %lld bytes of data, more than %lld bytes of gzip can hold (truncated?)",
                  path, fnn_shape_dims(ndim, shape).s, (long long)total, (long long)file_bytes);
    FNN_TRY(fnn_empty(out, ndim, shape));
    advise_huge_pages(fnn_data(out), total * (int64_t)sizeof(float));
    float table[256];   /* byte -> float: one lookup per value */
    for (int v = 0; v < 256; v++) table[v] = (float)(v * scale);
    unsigned char *buf = fnn_alloc(fnn_make_device(FNN_DEVICE_CPU, 0), IDX_CHUNK);
    if (!buf) { fnn_tensor_clear(out); return fnn_last_status(); }
    float *y = fnn_data(out);
    int64_t done = 0;
    int rc = FNN_STATUS_OK;
    while (done < total) {
        int64_t want = total - done < IDX_CHUNK ? total - done : IDX_CHUNK;
        got = read_full(f, buf, want);
        if (got < 0) { rc = gz_failure(f, path, "corrupt data"); break; }
        for (int64_t i = 0; i < got; i++) y[done + i] = table[buf[i]];
        done += got;
        if (got < want) {
            rc = FNN_FAIL(FNN_STATUS_IO, "read_idx: %s: truncated, expected %lld bytes of data, got %lld", path,
                          (long long)total, (long long)done);
            break;
        }
    }
    fnn_free(fnn_make_device(FNN_DEVICE_CPU, 0), buf, IDX_CHUNK);
    if (rc) fnn_tensor_clear(out);
    return rc;
}

int fnn_read_idx(fnn_tensor *out, const char *path, double scale) {
    fnn_tensor_init(out);
    FNN_CHECK(path != NULL, FNN_STATUS_ARG, "read_idx: expected a path, got nil");
    errno = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FNN_CHECK(fd >= 0, FNN_STATUS_IO, "read_idx: %s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return FNN_FAIL(FNN_STATUS_IO, "read_idx: %s: not a regular file%s%s", path, e ? ": " : "", e ? strerror(e) : "");
    }
    gzFile f = gzdopen(fd, "rb");   /* owns fd from here */
    if (!f) {
        close(fd);
        return FNN_FAIL(FNN_STATUS_IO, "read_idx: %s: cannot open (out of memory)", path);
    }
    gzbuffer(f, 256 * 1024);
    int rc = read_idx_open(out, f, path, scale, (int64_t)st.st_size);
    gzclose(f);
    return rc;
}

/* on a device: the ids (checked here) copied there, then the index_select row of x's backend along dim 0
 * (core/ops/index.h; cuda/index.cu's gather) */
static int device_take_rows(fnn_tensor *out, const fnn_tensor *x, int64_t n, const int64_t *ids, const int64_t *shape) {
    const fnn_idx_row *row = fnn_index_row_for(x->device, "index_select");
    if (!row) return FNN_ROW_REFUSED("take_rows", x->device, false);
    fnn_tensor dids;
    int rc = fnn_upload(&dids, x->device, FNN_DTYPE_INT64, 1, &n, ids);
    if (!rc) rc = fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, shape);
    if (!rc) {
        fnn_idx_args a = {.op = "take_rows", .out = out, .x = x, .shape = x, .index = &dids, .dim = 0};
        if ((rc = row->forward(fnn_device_ordinal(x->device), &a))) fnn_tensor_clear(out);
    }
    fnn_tensor_clear(&dids);
    return rc;
}

/* take_rows' checks of x and the ids (any device); ids_known: they were checked against as many rows */
static int rows_check_known(const char *op, const fnn_tensor *x, int64_t n, const int64_t *ids, int64_t ids_known) {
    FNN_TRY(fnn_check_input_any(op, x));
    FNN_CHECK(x->ndim >= 1, FNN_STATUS_SHAPE, "%s: expected a tensor with rows, got %s", op, fnn_shape_of(x).s);
    FNN_CHECK(n >= 0 && (n == 0 || ids != NULL), FNN_STATUS_ARG, "%s: %lld ids%s", op, (long long)n,
              n < 0 ? " (must be >= 0)" : " but no id array");
    int64_t rows = x->shape[0];
    if (rows == ids_known) return FNN_STATUS_OK;
    for (int64_t i = 0; i < n; i++)
        FNN_CHECK(ids[i] >= 1 && ids[i] <= rows, FNN_STATUS_ARG, "%s: id %lld outside 1..%lld (rows of %s)", op,
                  (long long)ids[i], (long long)rows, fnn_shape_of(x).s);
    return FNN_STATUS_OK;
}
static int rows_check(const char *op, const fnn_tensor *x, int64_t n, const int64_t *ids) {
    return rows_check_known(op, x, n, ids, -1);
}

/* y (contiguous, n rows of x's row) = x's rows ids (checked; x on the cpu). fresh: y was just allocated
 * for this batch. A loader's fresh batch lands in memory its GC freed long ago (see the reuse notes
 * below), so the rows are streamed past the cache (fnn_gather_rows' stream): no read of the cold lines
 * before they are written; a reused buffer is in cache and takes plain stores */
static void rows_write(char *y, const fnn_tensor *x, int64_t n, const int64_t *ids, bool fresh) {
    int64_t row = fnn_numel_of(x->ndim - 1, x->shape + 1);
    if (row == 0 || n == 0) return;
    /* one row's dims contiguous: a memcpy per row, whatever the row stride */
    int64_t expect = 1;
    bool rows_contiguous = true;
    for (int d = x->ndim - 1; d >= 1; d--) {
        if (x->shape[d] != 1 && x->stride[d] != expect) rows_contiguous = false;
        expect *= x->shape[d];
    }
    const int esize = fnn_elem_size(x);
    const char *src = fnn_bytes(x);
    size_t row_bytes = (size_t)row * (size_t)esize;
    if (rows_contiguous) {
        fnn_gather_rows(y, src, x->stride[0] * esize, row_bytes, ids, n, 1, fresh);
        return;
    }
    /* strided rows: copy each one row-major */
    for (int64_t i = 0; i < n; i++)
        fnn_strided_copy(y + (size_t)i * row_bytes, src + (ids[i] - 1) * x->stride[0] * esize, esize, x->ndim - 1,
                         x->shape + 1, x->stride + 1);
}

/* ---- take_rows: x [N, rest...], ids 1-based -> [n, rest...] (plain data, no node) ---- */
int fnn_take_rows(fnn_tensor *out, const fnn_tensor *x, int64_t n, const int64_t *ids) {
    FNN_TRY(rows_check("take_rows", x, n, ids));
    int64_t shape[FNN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[0] = n;
    if (fnn_device_type_of(x->device) != FNN_DEVICE_CPU) return device_take_rows(out, x, n, ids, shape);
    FNN_TRY(fnn_new_output_dtype(out, x->device, x->dtype, x->ndim, shape));
    rows_write(fnn_bytes(out), x, n, ids, true);
    return FNN_STATUS_OK;
}

/* ---- the order of a pass (DataLoader:iter) ----
 * Drawn here rather than in Lua: 60,000 swaps through uint64 cdata cost the loader ~0.65 ms a
 * Fashion-MNIST epoch, ~5% of a reused epoch. The stream and the swaps are the ones the Lua loop
 * made, so a seed gives the same batches as before. */
static uint64_t loader_next(uint64_t *s) {   /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int fnn_loader_order(int64_t *ids, int64_t n, uint64_t *state) {
    FNN_CHECK(n >= 0 && (n == 0 || ids != NULL), FNN_STATUS_ARG, "loader_order: %lld ids%s", (long long)n,
              n < 0 ? " (must be >= 0)" : " but no id array");
    for (int64_t i = 0; i < n; i++) ids[i] = i + 1;
    if (!state) return FNN_STATUS_OK;
    for (int64_t i = n - 1; i >= 1; i--) {
        int64_t j = (int64_t)(loader_next(state) % (uint64_t)(i + 1));
        int64_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    return FNN_STATUS_OK;
}

/* ---- a batch into buffers that are reused (DataLoader's reuse) ----
 * A freshly allocated batch is cold: the loader's batches are freed only when Lua's GC runs (every
 * ~190 batches of Fashion-MNIST), so each batch is written into memory not touched for a while.
 * Writing every batch into the same buffer keeps it in L2: a shuffled epoch of gathers ~1.8x faster. */

/* *buf: kept when it is a cpu buffer of dtype and shape [>= shape[0], shape[1..]] (its own storage,
 * contiguous), else made [shape[0], ...] afresh */
static int ensure_buffer(fnn_tensor *buf, int dtype, int ndim, const int64_t *shape) {
    bool fits = buf->ndim == ndim && buf->dtype == dtype && buf->node == NULL && buf->offset == 0 &&
                fnn_device_type_of(buf->device) == FNN_DEVICE_CPU && fnn_tensor_is_contiguous(buf) &&
                buf->shape[0] >= shape[0];
    for (int d = 1; fits && d < ndim; d++) fits = buf->shape[d] == shape[d];
    if (fits) return FNN_STATUS_OK;
    fnn_tensor_clear(buf);
    return fnn_new_output_dtype(buf, fnn_make_device(FNN_DEVICE_CPU, 0), dtype, ndim, shape);
}

int fnn_take_batch_into(fnn_tensor *inputs, fnn_tensor *targets, fnn_tensor *xbuf, fnn_tensor *ybuf, int kind,
                        const fnn_tensor *a, const fnn_tensor *b, int64_t context, int64_t stride, int64_t n,
                        const int64_t *ids, int64_t cap) {
    FNN_CHECK(inputs && targets && xbuf && ybuf && a, FNN_STATUS_ARG,
              "take_batch_into: expected two headers, two buffers and the dataset");
    fnn_tensor_init(inputs);
    fnn_tensor_init(targets);
    FNN_CHECK(kind == FNN_PREFETCH_ROWS || kind == FNN_PREFETCH_WINDOWS, FNN_STATUS_ARG,
              "take_batch_into: unknown dataset kind %d (reuse takes rows or windows)", kind);
    if (cap < n) cap = n;
    int64_t xshape[FNN_MAX_DIMS], yshape[FNN_MAX_DIMS];
    if (kind == FNN_PREFETCH_WINDOWS) {
        FNN_TRY(fnn_take_windows_check(a, context, stride, n, ids));
        xshape[0] = yshape[0] = cap;
        xshape[1] = yshape[1] = context;
        FNN_TRY(ensure_buffer(xbuf, FNN_DTYPE_INT64, 2, xshape));
        FNN_TRY(ensure_buffer(ybuf, FNN_DTYPE_INT64, 2, yshape));
        fnn_take_windows_write(fnn_data_i64(xbuf), fnn_data_i64(ybuf), a, context, stride, n, ids);
    } else {
        FNN_TRY(rows_check("take_rows", a, n, ids));
        if (b) FNN_TRY(rows_check_known("take_rows", b, n, ids, a->shape[0]));   /* a's rows: the same ids */
        FNN_CHECK(fnn_device_type_of(a->device) == FNN_DEVICE_CPU && (!b || fnn_device_type_of(b->device) == FNN_DEVICE_CPU),
                  FNN_STATUS_DEVICE, "DataLoader: reuse needs the dataset's tensors on the cpu (they are on a device)");
        memcpy(xshape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
        xshape[0] = cap;
        FNN_TRY(ensure_buffer(xbuf, a->dtype, a->ndim, xshape));
        rows_write(fnn_bytes(xbuf), a, n, ids, false);
        if (b) {
            memcpy(yshape, b->shape, sizeof(int64_t) * (size_t)b->ndim);
            yshape[0] = cap;
            FNN_TRY(ensure_buffer(ybuf, b->dtype, b->ndim, yshape));
            rows_write(fnn_bytes(ybuf), b, n, ids, false);
        }
    }
    /* the batch: views of the buffers' first n rows (the last batch of a pass is shorter) */
    FNN_TRY(fnn_tensor_ref(inputs, xbuf));
    inputs->shape[0] = n;
    if (kind == FNN_PREFETCH_WINDOWS || b) {
        int rc = fnn_tensor_ref(targets, ybuf);
        if (rc) { fnn_tensor_clear(inputs); return rc; }
        targets->shape[0] = n;
    }
    return FNN_STATUS_OK;
}
