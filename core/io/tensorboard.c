/* tensorboard.c: TensorBoard event files (fastnn.tensorboard's SummaryWriter).
 *
 * A file is a sequence of records, each
 *   [uint64 length, little-endian] [uint32 masked CRC-32C of those 8 bytes]
 *   [length bytes: one serialized Event] [uint32 masked CRC-32C of them]
 * and the first Event is file_version "brain.Event:2". The Events are protocol buffers encoded by
 * the code protoc-c generates from tensorboard.proto (TensorBoard's own field numbers).
 *
 * Flush policy: records are queued in memory and written (write(2), so a crash of this process
 * no longer loses them) when max_queue are queued, by a flusher thread every flush_secs, and on
 * fnn_tb_flush / fnn_tb_close, which also fdatasync the file. So a crash loses at most what was
 * added since the last flush. The queue holds whole records: the file never gets half of one
 * unless the disk fails mid-write (TensorBoard then reads up to the truncated record).
 *
 * defines: fnn_tb_open, fnn_tb_path, fnn_tb_scalar, fnn_tb_histogram, fnn_tb_image, fnn_tb_text,
 * fnn_tb_flush, fnn_tb_close. Errors name the file. */
#define _GNU_SOURCE
#include "internal.h"
#include "io/png.h"
#include "tensorboard.pb-c.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct fnn_tb_writer {
    pthread_mutex_t mu;        /* guards everything below it */
    pthread_cond_t wake;       /* the flusher's timer; signalled to stop it */
    pthread_t flusher;
    int fd;
    int stop;
    int queued;                /* records in buf */
    int max_queue;
    double flush_secs;
    uint8_t *buf;              /* whole records not yet written */
    size_t len, cap;
    char failed[512];          /* a write the flusher could not do, reported by the next call */
    char *path;
};

static atomic_ulong files_opened;   /* two writers of one process in one second get distinct names */

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* mkdir -p; 0, or -1 with errno */
static int make_dirs(const char *dir) {
    char *p = strdup(dir);
    if (!p) { errno = ENOMEM; return -1; }
    for (char *s = p + 1; ; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) { free(p); return -1; }
            *s = c;
            if (c == '\0') break;
        }
    }
    free(p);
    struct stat st;
    if (stat(dir, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}

/* the queued records -> the file (under w->mu); 0, or -1 with w->failed set */
static int write_out(fnn_tb_writer *w) {
    size_t done = 0;
    while (done < w->len) {
        ssize_t put = write(w->fd, w->buf + done, w->len - done);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) {
            snprintf(w->failed, sizeof w->failed, "cannot write %s: %s", w->path, put < 0 ? strerror(errno) : "no progress");
            /* what did reach the file is not written twice */
            memmove(w->buf, w->buf + done, w->len - done);
            w->len -= done;
            return -1;
        }
        done += (size_t)put;
    }
    w->len = 0;
    w->queued = 0;
    return 0;
}

/* the flusher: every flush_secs, whatever is queued goes to the file */
static void *flusher_main(void *arg) {
    fnn_tb_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double secs = floor(w->flush_secs);
        until.tv_sec += (time_t)secs;
        until.tv_nsec += (long)((w->flush_secs - secs) * 1e9);
        if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
        int rc = 0;
        while (!w->stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&w->wake, &w->mu, &until);
        if (w->len > 0 && !w->failed[0]) write_out(w);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* the record of one Event appended to the queue (under w->mu) */
static int queue_event(fnn_tb_writer *w, const Tensorboard__Event *ev) {
    size_t n = protobuf_c_message_get_packed_size(&ev->base);
    size_t need = w->len + n + 16;
    if (need > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < need) cap *= 2;
        uint8_t *grown = realloc(w->buf, cap);
        FNN_CHECK(grown, FNN_STATUS_OOM, "tensorboard: %s: out of memory queueing %zu bytes", w->path, n);
        w->buf = grown;
        w->cap = cap;
    }
    uint8_t *r = w->buf + w->len;
    uint64_t len = n;
    for (int i = 0; i < 8; i++) r[i] = (uint8_t)(len >> (8 * i));
    uint32_t head_crc = fnn_crc32c_masked(r, 8);
    for (int i = 0; i < 4; i++) r[8 + i] = (uint8_t)(head_crc >> (8 * i));
    size_t packed = protobuf_c_message_pack(&ev->base, r + 12);
    FNN_CHECK(packed == n, FNN_STATUS_INTERNAL, "tensorboard: an Event packed to %zu bytes, expected %zu", packed, n);
    uint32_t body_crc = fnn_crc32c_masked(r + 12, n);
    for (int i = 0; i < 4; i++) r[12 + n + i] = (uint8_t)(body_crc >> (8 * i));
    w->len += n + 16;
    w->queued++;
    return FNN_STATUS_OK;
}

static int report_failed(fnn_tb_writer *w) {
    return FNN_FAIL(FNN_STATUS_IO, "tensorboard: %s", w->failed);
}

/* one Event into the queue, and the queue out when it holds max_queue (or when now) */
static int add_event(fnn_tb_writer *w, Tensorboard__Event *ev, int now) {
    pthread_mutex_lock(&w->mu);
    int rc = w->failed[0] ? report_failed(w) : queue_event(w, ev);
    if (rc == FNN_STATUS_OK && (now || w->queued >= w->max_queue) && write_out(w) != 0) rc = report_failed(w);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* an Event holding one Summary.Value for tag at step */
static int add_value(fnn_tb_writer *w, Tensorboard__Summary__Value *v, const char *tag, int64_t step) {
    v->tag = (char *)tag;
    Tensorboard__Summary__Value *values[1] = {v};
    Tensorboard__Summary summary = TENSORBOARD__SUMMARY__INIT;
    summary.n_value = 1;
    summary.value = values;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_now();
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &summary;
    return add_event(w, &ev, 0);
}

/* a new event file in logdir (made when missing): events.out.tfevents.<time>.<host>.<pid>.<n>,
 * as PyTorch names them; flush_secs > 0 is the flusher's period, max_queue >= 1 the records held */
int fnn_tb_open(fnn_tb_writer **out, const char *logdir, double flush_secs, int max_queue) {
    FNN_CHECK(out, FNN_STATUS_ARG, "tensorboard: no place for the writer");
    *out = NULL;
    FNN_CHECK(logdir && *logdir, FNN_STATUS_ARG, "tensorboard: no log directory given");
    FNN_CHECK(flush_secs > 0 && isfinite(flush_secs), FNN_STATUS_ARG, "tensorboard: flush_secs %g is not > 0", flush_secs);
    FNN_CHECK(max_queue >= 1, FNN_STATUS_ARG, "tensorboard: max_queue %d is not >= 1", max_queue);
    FNN_CHECK(make_dirs(logdir) == 0, FNN_STATUS_IO, "tensorboard: cannot make the log directory %s: %s", logdir,
              strerror(errno));
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    size_t plen = strlen(logdir) + strlen(host) + 96;
    fnn_tb_writer *w = calloc(1, sizeof *w);
    char *path = malloc(plen);
    if (!w || !path) {
        free(w);
        free(path);
        return FNN_FAIL(FNN_STATUS_OOM, "tensorboard: %s: out of memory", logdir);
    }
    snprintf(path, plen, "%s/events.out.tfevents.%010lld.%s.%ld.%lu", logdir, (long long)time(NULL), host,
             (long)getpid(), (unsigned long)atomic_fetch_add(&files_opened, 1));
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        int rc = FNN_FAIL(FNN_STATUS_IO, "tensorboard: cannot create %s: %s", path, strerror(errno));
        free(path);
        free(w);
        return rc;
    }
    w->path = path;
    w->flush_secs = flush_secs;
    w->max_queue = max_queue;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    /* the first record says which format follows; written at once, so the file is a run TensorBoard lists */
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_now();
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = "brain.Event:2";
    int rc = add_event(w, &ev, 1);
    if (rc == FNN_STATUS_OK && pthread_create(&w->flusher, NULL, flusher_main, w) != 0)
        rc = FNN_FAIL(FNN_STATUS_INTERNAL, "tensorboard: %s: cannot start the flusher thread", path);
    if (rc != FNN_STATUS_OK) {
        close(w->fd);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->mu);
        free(w->buf);
        free(path);
        free(w);
        return rc;
    }
    *out = w;
    return FNN_STATUS_OK;
}

const char *fnn_tb_path(const fnn_tb_writer *w) { return w ? w->path : NULL; }

/* a scalar: Summary.Value.simple_value (a float, as TensorBoard stores it) */
int fnn_tb_scalar(fnn_tb_writer *w, const char *tag, double value, int64_t step) {
    FNN_CHECK(w && tag, FNN_STATUS_ARG, "tensorboard: no writer or no tag");
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    v.simple_value = (float)value;
    return add_value(w, &v, tag, step);
}

/* PyTorch's (and TensorFlow's) default bucket edges: 0, +-1e-12 * 1.1^k below 1e20; *n of them */
static double *default_edges(int *n) {
    int pos = 0;
    for (double v = 1e-12; v < 1e20; v *= 1.1) pos++;
    double *e = malloc(sizeof(double) * (size_t)(2 * pos + 1));
    if (!e) return NULL;
    int k = 0;
    for (double v = 1e-12; v < 1e20; v *= 1.1, k++) {
        e[pos + 1 + k] = v;
        e[pos - 1 - k] = -v;
    }
    e[pos] = 0.0;
    *n = 2 * pos + 1;
    return e;
}

/* a histogram of values[0..n) in PyTorch's layout (torch.utils.tensorboard.summary.make_histogram with
 * the default bins): bin i counts edges[i] <= x < edges[i+1] (the last one closed; values outside
 * every bin are counted in num only), trimmed to the bins from the first to the last non-empty one,
 * plus the empty bin left of them so the lowest edge shows. bucket_limit holds each bin's right edge. */
int fnn_tb_histogram(fnn_tb_writer *w, const char *tag, const double *values, int64_t n, int64_t step) {
    FNN_CHECK(w && tag && values, FNN_STATUS_ARG, "tensorboard: no writer, tag or values");
    FNN_CHECK(n > 0, FNN_STATUS_ARG, "tensorboard: histogram %s: no values", tag);
    double mn = values[0], mx = values[0], sum = 0, sum_sq = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = values[i];
        FNN_CHECK(isfinite(x), FNN_STATUS_ARG, "tensorboard: histogram %s: value %lld is %s (values must be finite)",
                  tag, (long long)i + 1, isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
        if (x < mn) mn = x;
        if (x > mx) mx = x;
        sum += x;
        sum_sq += x * x;
    }
    int ne = 0;
    double *edges = default_edges(&ne);
    int64_t *counts = calloc((size_t)ne, sizeof(int64_t));
    double *limits = malloc(sizeof(double) * (size_t)ne), *bucket = malloc(sizeof(double) * (size_t)ne);
    if (!edges || !counts || !limits || !bucket) {
        free(edges); free(counts); free(limits); free(bucket);
        return FNN_FAIL(FNN_STATUS_OOM, "tensorboard: histogram %s: out of memory", tag);
    }
    int nb = ne - 1;   /* bins */
    for (int64_t i = 0; i < n; i++) {
        double x = values[i];
        if (x < edges[0] || x > edges[nb]) continue;
        int lo = 0, hi = nb;   /* the last edge <= x: edges[lo] <= x < edges[hi] */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (edges[mid] <= x) lo = mid; else hi = mid;
        }
        counts[lo < nb ? lo : nb - 1]++;
    }
    int first = -1, last = -1;
    for (int i = 0; i < nb; i++) if (counts[i] > 0) { if (first < 0) first = i; last = i; }
    int rc = FNN_STATUS_OK;
    if (first < 0) {
        rc = FNN_FAIL(FNN_STATUS_ARG, "tensorboard: histogram %s: every value lies outside the buckets' range "
                      "(%g .. %g)", tag, edges[0], edges[nb]);
    } else {
        int m = 0;
        limits[m] = edges[first];
        bucket[m++] = first > 0 ? (double)counts[first - 1] : 0.0;   /* empty: first is the first non-empty bin */
        for (int i = first; i <= last; i++) {
            limits[m] = edges[i + 1];
            bucket[m++] = (double)counts[i];
        }
        Tensorboard__HistogramProto h = TENSORBOARD__HISTOGRAM_PROTO__INIT;
        h.min = mn;
        h.max = mx;
        h.num = (double)n;
        h.sum = sum;
        h.sum_squares = sum_sq;
        h.n_bucket_limit = h.n_bucket = (size_t)m;
        h.bucket_limit = limits;
        h.bucket = bucket;
        Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
        v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_HISTO;
        v.histo = &h;
        rc = add_value(w, &v, tag, step);
    }
    free(edges); free(counts); free(limits); free(bucket);
    return rc;
}

static inline uint8_t to_byte(float v) {
    if (!(v > 0.0f)) return 0;
    if (v >= 1.0f) return 255;
    return (uint8_t)lrintf(v * 255.0f);
}

/* a picture chw [c, h, w] in [0, 1] (c 1 grey, 3 RGB, 4 RGBA; rounded to 8 bits as image.save does)
 * as a PNG Summary.Image */
int fnn_tb_image(fnn_tb_writer *w, const char *tag, const float *chw, int c, int h, int width, int64_t step) {
    FNN_CHECK(w && tag && chw, FNN_STATUS_ARG, "tensorboard: no writer, tag or pixels");
    FNN_CHECK(c == 1 || c == 3 || c == 4, FNN_STATUS_SHAPE, "tensorboard: image %s: %d channels (expected 1, 3 or 4)",
              tag, c);
    FNN_CHECK(h > 0 && width > 0 && h <= 1 << 16 && width <= 1 << 16, FNN_STATUS_SHAPE,
              "tensorboard: image %s: size %dx%d outside 1..65536", tag, h, width);
    size_t plane = (size_t)h * (size_t)width;
    for (size_t i = 0; i < plane * (size_t)c; i++)
        FNN_CHECK(!isnan(chw[i]), FNN_STATUS_ARG, "tensorboard: image %s: pixel value %zu is nan", tag, i + 1);
    uint8_t *px = malloc(plane * (size_t)c);
    FNN_CHECK(px, FNN_STATUS_OOM, "tensorboard: image %s: out of memory", tag);
    for (size_t p = 0; p < plane; p++)
        for (int k = 0; k < c; k++) px[p * (size_t)c + (size_t)k] = to_byte(chw[(size_t)k * plane + p]);
    uint8_t *png = NULL;
    size_t png_len = 0;
    int rc = fnn_png_encode(&png, &png_len, width, h, c, px);
    free(px);
    if (rc != FNN_STATUS_OK) return rc;
    Tensorboard__Summary__Image img = TENSORBOARD__SUMMARY__IMAGE__INIT;
    img.height = h;
    img.width = width;
    img.colorspace = c;
    img.encoded_image_string.data = png;
    img.encoded_image_string.len = png_len;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_IMAGE;
    v.image = &img;
    rc = add_value(w, &v, tag, step);
    free(png);
    return rc;
}

/* text[0..len) (markdown, as TensorBoard's text plugin shows it) as a DT_STRING tensor of shape [1]
 * with the text plugin's metadata (plugin "text", an empty TextPluginData: version 0) */
int fnn_tb_text(fnn_tb_writer *w, const char *tag, const char *text, int64_t len, int64_t step) {
    FNN_CHECK(w && tag && (text || len == 0), FNN_STATUS_ARG, "tensorboard: no writer, tag or text");
    FNN_CHECK(len >= 0, FNN_STATUS_ARG, "tensorboard: text %s: length %lld", tag, (long long)len);
    Tensorboard__SummaryMetadata__PluginData plugin = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
    plugin.plugin_name = "text";
    Tensorboard__SummaryMetadata meta = TENSORBOARD__SUMMARY_METADATA__INIT;
    meta.plugin_data = &plugin;
    Tensorboard__TensorShapeProto__Dim dim = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT;
    dim.size = 1;
    Tensorboard__TensorShapeProto__Dim *dims[1] = {&dim};
    Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
    shape.n_dim = 1;
    shape.dim = dims;
    ProtobufCBinaryData s = {(size_t)len, (uint8_t *)text};
    Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
    t.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
    t.tensor_shape = &shape;
    t.n_string_val = 1;
    t.string_val = &s;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.metadata = &meta;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
    v.tensor = &t;
    return add_value(w, &v, tag, step);
}

/* everything queued -> the file, and the file -> the disk */
int fnn_tb_flush(fnn_tb_writer *w) {
    FNN_CHECK(w, FNN_STATUS_ARG, "tensorboard: no writer");
    pthread_mutex_lock(&w->mu);
    int rc = FNN_STATUS_OK;
    if (w->failed[0] || write_out(w) != 0) rc = report_failed(w);
    else if (fdatasync(w->fd) != 0 && errno != EINVAL)   /* EINVAL: a file system without sync (a pipe, /dev/null) */
        rc = FNN_FAIL(FNN_STATUS_IO, "tensorboard: cannot sync %s: %s", w->path, strerror(errno));
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* flush, stop the flusher, close the file and free the writer (NULL: nothing); the writer is gone
 * even when the last flush fails (the error says so) */
int fnn_tb_close(fnn_tb_writer *w) {
    if (!w) return FNN_STATUS_OK;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->flusher, NULL);
    int rc = fnn_tb_flush(w);
    if (close(w->fd) != 0 && rc == FNN_STATUS_OK)
        rc = FNN_FAIL(FNN_STATUS_IO, "tensorboard: cannot close %s: %s", w->path, strerror(errno));
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w->buf);
    free(w->path);
    free(w);
    return rc;
}
