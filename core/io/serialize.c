/* serialize.c: the one container of checkpoints and exchange files, a safetensors file.
 *
 *   [8 bytes: header length N, little-endian] [N bytes: JSON header, space-padded] [data]
 *   header: {"__metadata__": {"key": "string", ...}, "name": {"dtype": "F32", "shape": [2, 3],
 *            "data_offsets": [begin, end]}, ...}, offsets relative to the data, tiling it exactly
 *
 * fastnn's files (.fdl) add CRC-32s to __metadata__: "fdl.crc32.<name>" of each tensor's bytes
 * and "fdl.header_crc32" of the first 8 + N bytes read with that value's 8 digits as '0'. So a
 * flipped bit anywhere is refused, and the file still opens in any safetensors tool.
 *
 * defines: fnn_safetensors_save (atomic write), fnn_safetensors_open/read/verify (validating
 * reader), F16/BF16 conversion (round to nearest even), a threaded CRC-32.
 * Everything read is untrusted: sizes are checked against the file before anything of that size
 * is allocated, and every failure is a message naming the file, never a crash. */
#define _GNU_SOURCE
#include "bf16.h"
#include "internal.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum {
    ST_HEADER_MAX = 100 << 20,   /* the reference implementation's limit on the JSON header */
    ST_CHUNK = 1 << 20,          /* conversion and CRC buffer */
    ST_CRC_PART = 4 << 20        /* bytes per thread below which one thread computes a CRC */
};
#define HEADER_CRC_KEY "fdl.header_crc32"
#define CRC_PREFIX "fdl.crc32."

static const char *const st_names[] = {"F32", "I64", "F16", "BF16", "F64", "I32"};
static const int st_sizes[] = {4, 8, 2, 2, 8, 4};
enum { ST_NDTYPES = 6 };

const char *fnn_st_dtype_name(int d) { return d >= 0 && d < ST_NDTYPES ? st_names[d] : "unknown"; }

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* reverse each esize-byte element in place (only on a big-endian host) */
static void swap_bytes(void *p, int64_t n, int esize) {
    unsigned char *b = p;
    for (int64_t i = 0; i < n; i++, b += esize)
        for (int j = 0; j < esize / 2; j++) {
            unsigned char t = b[j];
            b[j] = b[esize - 1 - j];
            b[esize - 1 - j] = t;
        }
}

/* ---- 16-bit floats: narrowing rounds to nearest even, nan stays nan (quiet), overflow is inf
 * (bfloat16's conversions are core/bf16.h's, shared with the bfloat16 dtype) ---- */
#define f32_to_bf16 fnn_bf16_from_f32
#define bf16_to_f32 fnn_bf16_to_f32

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7E00u;                 /* nan */
    if (a >= 0x477FF000u) return sign | 0x7C00u;                /* >= 65520 (or inf): inf */
    if (a >= 0x38800000u) {                                     /* normal half: drop 13 bits */
        uint32_t h = (a >> 13) - (112u << 10), rem = a & 0x1FFFu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        return sign | (uint16_t)h;
    }
    if (a < 0x33000000u) return sign;                           /* <= 2^-25: zero */
    /* subnormal half: round(|f| * 2^24) = mantissa (with its implicit bit) >> (126 - exponent) */
    uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u;
    int shift = 126 - (int)e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return sign | (uint16_t)q;
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, x;
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;            /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    if (e == 31) x = sign | 0x7F800000u | (m << 13);
    else x = sign | ((e + 112u) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- CRC-32 (zlib's), split over threads for large buffers and joined with crc32_combine ---- */

typedef struct { const unsigned char *p; int64_t n, part; uLong crc[64]; } crc_job;

static uLong crc_run(uLong crc, const unsigned char *p, int64_t n) {
    while (n > 0) {
        uInt len = n > (1 << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, len);
        p += len;
        n -= len;
    }
    return crc;
}

static void crc_range(void *ctx, int64_t lo, int64_t hi) {
    crc_job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        int64_t at = k * j->part, len = j->n - at < j->part ? j->n - at : j->part;
        j->crc[k] = crc_run(crc32(0L, Z_NULL, 0), j->p + at, len);
    }
}

/* crc continued over n bytes at p */
static uLong crc_update(uLong crc, const void *p, int64_t n) {
    int threads = fnn_threads_for(n / 4);
    if (threads > 64) threads = 64;
    if (threads <= 1 || n < 2 * (int64_t)ST_CRC_PART) return crc_run(crc, p, n);
    crc_job j = {.p = p, .n = n, .part = (n + threads - 1) / threads};
    int64_t parts = (n + j.part - 1) / j.part;
    fnn_parallel_for(parts, threads, crc_range, &j);
    for (int64_t k = 0; k < parts; k++) {
        int64_t len = n - k * j.part < j.part ? n - k * j.part : j.part;
        crc = crc32_combine(crc, j.crc[k], (z_off_t)len);
    }
    return crc;
}

/* ---- file helpers ---- */

static int read_at(int fd, void *buf, int64_t len, int64_t at, int64_t *got) {
    unsigned char *b = buf;
    *got = 0;
    while (*got < len) {
        int64_t want = len - *got > (1 << 30) ? (1 << 30) : len - *got;
        ssize_t r = pread(fd, b + *got, (size_t)want, (off_t)(at + *got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        *got += r;
    }
    return 0;
}

static int write_all(int fd, const void *buf, int64_t len) {
    const unsigned char *b = buf;
    while (len > 0) {
        int64_t want = len > (1 << 30) ? (1 << 30) : len;
        ssize_t w = write(fd, b, (size_t)want);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        b += w;
        len -= w;
    }
    return 0;
}

static int parse_hex32(const char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return 0;
        v = v << 4 | (uint32_t)d;
    }
    if (s[8] != '\0') return 0;
    *out = v;
    return 1;
}

/* cJSON records a parse error position in a global; one parse at a time keeps that race out */
static pthread_mutex_t json_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the reader ---- */

typedef struct st_entry {
    char *name;
    int dtype, ndim;
    int64_t shape[FNN_MAX_DIMS];
    int64_t begin, end;
    uint32_t crc;
} st_entry;

struct fnn_safetensors {
    int fd;
    char *path;
    int64_t data_start, data_size;
    int n, n_meta, checksummed;
    st_entry *e;
    char **meta_key, **meta_value;
};

void fnn_safetensors_close(fnn_safetensors *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    for (int i = 0; i < f->n; i++) free(f->e[i].name);
    for (int i = 0; i < f->n_meta; i++) { free(f->meta_key[i]); free(f->meta_value[i]); }
    free(f->e);
    free(f->meta_key);
    free(f->meta_value);
    free(f->path);
    free(f);
}

int fnn_safetensors_count(const fnn_safetensors *f) { return f ? f->n : 0; }
int fnn_safetensors_checksummed(const fnn_safetensors *f) { return f ? f->checksummed : 0; }
int fnn_safetensors_meta_count(const fnn_safetensors *f) { return f ? f->n_meta : 0; }
const char *fnn_safetensors_name(const fnn_safetensors *f, int i) {
    return f && i >= 0 && i < f->n ? f->e[i].name : NULL;
}
const char *fnn_safetensors_meta_key(const fnn_safetensors *f, int i) {
    return f && i >= 0 && i < f->n_meta ? f->meta_key[i] : NULL;
}
const char *fnn_safetensors_meta_value(const fnn_safetensors *f, int i) {
    return f && i >= 0 && i < f->n_meta ? f->meta_value[i] : NULL;
}

int fnn_safetensors_info(const fnn_safetensors *f, int i, int *st_dtype, int *ndim, int64_t *shape) {
    FNN_CHECK(f != NULL, FNN_STATUS_ARG, "safetensors_info: no file");
    FNN_CHECK(i >= 0 && i < f->n, FNN_STATUS_ARG, "%s: tensor %d out of range (the file has %d)", f->path, i + 1, f->n);
    const st_entry *e = &f->e[i];
    if (st_dtype) *st_dtype = e->dtype;
    if (ndim) *ndim = e->ndim;
    if (shape) for (int d = 0; d < e->ndim; d++) shape[d] = e->shape[d];
    return FNN_STATUS_OK;
}

/* a JSON number that is a whole number in [0, 2^53] */
static int whole(const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(int64_t)d) return 0;
    *out = (int64_t)d;
    return 1;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static int by_offset(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the header CRC: bytes [0, 8 + N) with the digits of "fdl.header_crc32":"xxxxxxxx" read as '0'.
 * The key can stand only once in a valid header (a quote inside a JSON string is escaped). */
static int check_header_crc(fnn_safetensors *f, const unsigned char *prefix, char *text, int64_t len,
                            const char *stored) {
    static const char key[] = "\"" HEADER_CRC_KEY "\":\"";
    uint32_t want;
    FNN_CHECK(parse_hex32(stored, &want), FNN_STATUS_IO,
              "%s: corrupted header: %s is '%.16s', expected 8 hex digits", f->path, HEADER_CRC_KEY, stored);
    char *at = memmem(text, (size_t)len, key, sizeof key - 1);
    FNN_CHECK(at && at + (sizeof key - 1) + 8 <= text + len, FNN_STATUS_IO,
              "%s: corrupted header: %s is not written as a checksummed file writes it", f->path, HEADER_CRC_KEY);
    char *digits = at + sizeof key - 1;
    FNN_CHECK(!memmem(digits, (size_t)(text + len - digits), key, sizeof key - 1), FNN_STATUS_IO,
              "%s: corrupted header: %s appears twice", f->path, HEADER_CRC_KEY);
    FNN_CHECK(memcmp(digits, stored, 8) == 0, FNN_STATUS_IO, "%s: corrupted header: %s disagrees with itself",
              f->path, HEADER_CRC_KEY);
    char saved[8];
    memcpy(saved, digits, 8);
    memset(digits, '0', 8);
    uLong crc = crc32(crc32(0L, Z_NULL, 0), prefix, 8);
    crc = crc_update(crc, text, len);
    memcpy(digits, saved, 8);
    FNN_CHECK((uint32_t)crc == want, FNN_STATUS_IO,
              "%s: the header fails its CRC-32 check (stored %08x, computed %08x): the file is corrupted",
              f->path, want, (unsigned)crc);
    return FNN_STATUS_OK;
}

/* __metadata__: strings only. Checksum keys are kept apart (crc_keys) for the tensors to find */
static int read_metadata(fnn_safetensors *f, const cJSON *meta, const unsigned char *prefix, char *text,
                         int64_t len, const cJSON **crc_obj) {
    FNN_CHECK(cJSON_IsObject(meta), FNN_STATUS_IO, "%s: __metadata__ is not an object", f->path);
    int count = cJSON_GetArraySize(meta), fdl = 0;
    const cJSON *header_crc = NULL;
    f->meta_key = calloc((size_t)count + 1, sizeof(char *));
    f->meta_value = calloc((size_t)count + 1, sizeof(char *));
    FNN_CHECK(f->meta_key && f->meta_value, FNN_STATUS_OOM, "%s: out of memory reading the header", f->path);
    for (const cJSON *m = meta->child; m; m = m->next) {
        FNN_CHECK(cJSON_IsString(m) && m->valuestring, FNN_STATUS_IO,
                  "%s: __metadata__ value of '%s' is not a string (safetensors metadata holds strings)", f->path,
                  m->string);
        if (strncmp(m->string, "fdl.", 4) == 0) fdl = 1;
        if (strcmp(m->string, HEADER_CRC_KEY) == 0) {
            FNN_CHECK(!header_crc, FNN_STATUS_IO, "%s: corrupted header: %s appears twice", f->path, HEADER_CRC_KEY);
            header_crc = m;
            continue;
        }
        if (strncmp(m->string, CRC_PREFIX, sizeof CRC_PREFIX - 1) == 0) continue;
        f->meta_key[f->n_meta] = dup_str(m->string);
        f->meta_value[f->n_meta] = dup_str(m->valuestring);
        FNN_CHECK(f->meta_key[f->n_meta] && f->meta_value[f->n_meta], FNN_STATUS_OOM,
                  "%s: out of memory reading the header", f->path);
        f->n_meta++;
    }
    if (!fdl) return FNN_STATUS_OK;
    /* a file with any fdl. key is checksummed: one flipped byte cannot remove every such key */
    FNN_CHECK(header_crc, FNN_STATUS_IO, "%s: corrupted header: it has fdl. metadata but no %s", f->path,
              HEADER_CRC_KEY);
    FNN_TRY(check_header_crc(f, prefix, text, len, header_crc->valuestring));
    f->checksummed = 1;
    *crc_obj = meta;
    return FNN_STATUS_OK;
}

static int parse_entry(fnn_safetensors *f, const cJSON *item, st_entry *e) {
    const char *name = item->string;
    FNN_CHECK(cJSON_IsObject(item), FNN_STATUS_IO, "%s: tensor '%s' is not an object in the header", f->path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    FNN_CHECK(cJSON_IsString(dt) && dt->valuestring, FNN_STATUS_IO, "%s: tensor '%s' has no dtype", f->path, name);
    e->dtype = -1;
    for (int d = 0; d < ST_NDTYPES; d++)
        if (strcmp(dt->valuestring, st_names[d]) == 0) e->dtype = d;
    FNN_CHECK(e->dtype >= 0, FNN_STATUS_IO,
              "%s: tensor '%s' has dtype %.32s, which fastnn does not read (F32, F16, BF16, F64, I64, I32)",
              f->path, name, dt->valuestring);
    FNN_CHECK(cJSON_IsArray(sh), FNN_STATUS_IO, "%s: tensor '%s' has no shape array", f->path, name);
    e->ndim = cJSON_GetArraySize(sh);
    FNN_CHECK(e->ndim <= FNN_MAX_DIMS, FNN_STATUS_IO, "%s: tensor '%s' has %d dims, at most %d supported", f->path,
              name, e->ndim, FNN_MAX_DIMS);
    int d = 0;
    for (const cJSON *s = sh->child; s; s = s->next, d++)
        FNN_CHECK(whole(s, &e->shape[d]), FNN_STATUS_IO, "%s: tensor '%s': size %d of its shape is not a whole number",
                  f->path, name, d + 1);
    FNN_CHECK(cJSON_IsArray(off) && cJSON_GetArraySize(off) == 2 && whole(off->child, &e->begin) &&
              whole(off->child->next, &e->end), FNN_STATUS_IO,
              "%s: tensor '%s' has no data_offsets [begin, end] of whole numbers", f->path, name);
    FNN_CHECK(e->begin <= e->end && e->end <= f->data_size, FNN_STATUS_IO,
              "%s: tensor '%s' has data_offsets [%lld, %lld] outside the file's %lld data bytes (truncated?)",
              f->path, name, (long long)e->begin, (long long)e->end, (long long)f->data_size);
    /* the size the shape claims, computed only while it stays within the offsets (no overflow) */
    int64_t held = e->end - e->begin, bytes = st_sizes[e->dtype];
    double span = 1;   /* a size 0 empties the tensor, but its strides still multiply the other sizes */
    for (d = 0; d < e->ndim; d++) span *= e->shape[d] > 0 ? (double)e->shape[d] : 1.0;
    FNN_CHECK(span < 4611686018427387904.0, FNN_STATUS_IO, "%s: tensor '%s' has sizes %s, which multiply past 2^62",
              f->path, name, fnn_shape_dims(e->ndim, e->shape).s);
    for (d = 0; d < e->ndim; d++) if (e->shape[d] == 0) bytes = 0;
    for (d = 0; d < e->ndim && bytes > 0; d++) {
        FNN_CHECK(e->shape[d] <= held / bytes, FNN_STATUS_IO,
                  "%s: tensor '%s' claims %s %s, more than the %lld bytes its data_offsets [%lld, %lld] hold",
                  f->path, name, st_names[e->dtype], fnn_shape_dims(e->ndim, e->shape).s, (long long)held,
                  (long long)e->begin, (long long)e->end);
        bytes *= e->shape[d];
    }
    FNN_CHECK(bytes == held, FNN_STATUS_IO,
              "%s: tensor '%s' is %s %s (%lld bytes) but its data_offsets [%lld, %lld] hold %lld", f->path, name,
              st_names[e->dtype], fnn_shape_dims(e->ndim, e->shape).s, (long long)bytes, (long long)e->begin,
              (long long)e->end, (long long)held);
    e->name = dup_str(name);
    FNN_CHECK(e->name, FNN_STATUS_OOM, "%s: out of memory reading the header", f->path);
    return FNN_STATUS_OK;
}

/* the tensors: parsed, checked to tile the data exactly, names unique, CRCs attached */
static int read_entries(fnn_safetensors *f, const cJSON *root, const cJSON *crcs) {
    int count = 0;
    for (const cJSON *it = root->child; it; it = it->next)
        if (strcmp(it->string, "__metadata__") != 0) count++;
    f->e = calloc((size_t)count + 1, sizeof(st_entry));
    FNN_CHECK(f->e, FNN_STATUS_OOM, "%s: out of memory reading the header", f->path);
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) continue;
        int rc = parse_entry(f, it, &f->e[f->n]);
        if (rc) return rc;
        f->n++;
    }
    qsort(f->e, (size_t)f->n, sizeof(st_entry), by_offset);
    int64_t at = 0;
    for (int i = 0; i < f->n; i++) {
        FNN_CHECK(f->e[i].begin == at, FNN_STATUS_IO,
                  "%s: tensor '%s' starts at data byte %lld, where %lld was expected (the tensors must tile the data)",
                  f->path, f->e[i].name, (long long)f->e[i].begin, (long long)at);
        at = f->e[i].end;
    }
    FNN_CHECK(at == f->data_size, FNN_STATUS_IO,
              "%s: the tensors cover %lld data bytes but the file holds %lld after the header (truncated or extended?)",
              f->path, (long long)at, (long long)f->data_size);
    char **names = malloc(sizeof(char *) * ((size_t)f->n + 1));
    FNN_CHECK(names, FNN_STATUS_OOM, "%s: out of memory reading the header", f->path);
    for (int i = 0; i < f->n; i++) names[i] = f->e[i].name;
    qsort(names, (size_t)f->n, sizeof(char *), by_name);
    for (int i = 1; i < f->n; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            int rc = FNN_FAIL(FNN_STATUS_IO, "%s: tensor '%s' appears twice in the header", f->path, names[i]);
            free(names);
            return rc;
        }
    free(names);
    if (!crcs) return FNN_STATUS_OK;
    int n_crc = 0;
    for (const cJSON *m = crcs->child; m; m = m->next)
        if (strncmp(m->string, CRC_PREFIX, sizeof CRC_PREFIX - 1) == 0) n_crc++;
    FNN_CHECK(n_crc == f->n, FNN_STATUS_IO, "%s: corrupted header: %d tensors but %d checksums", f->path, f->n, n_crc);
    for (int i = 0; i < f->n; i++) {
        size_t klen = sizeof CRC_PREFIX + strlen(f->e[i].name);
        char *key = malloc(klen);
        FNN_CHECK(key, FNN_STATUS_OOM, "%s: out of memory reading the header", f->path);
        snprintf(key, klen, "%s%s", CRC_PREFIX, f->e[i].name);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(crcs, key);
        free(key);
        FNN_CHECK(v && parse_hex32(v->valuestring, &f->e[i].crc), FNN_STATUS_IO,
                  "%s: corrupted header: no valid checksum for tensor '%s'", f->path, f->e[i].name);
    }
    return FNN_STATUS_OK;
}

static int open_file(fnn_safetensors *f) {
    struct stat st;
    f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
    FNN_CHECK(f->fd >= 0, FNN_STATUS_IO, "%s: cannot open: %s", f->path, strerror(errno));
    FNN_CHECK(fstat(f->fd, &st) == 0, FNN_STATUS_IO, "%s: cannot stat: %s", f->path, strerror(errno));
    FNN_CHECK(S_ISREG(st.st_mode), FNN_STATUS_IO, "%s: not a regular file", f->path);
    int64_t size = (int64_t)st.st_size, got;
    unsigned char prefix[8];
    FNN_CHECK(read_at(f->fd, prefix, 8, 0, &got) == 0, FNN_STATUS_IO, "%s: cannot read: %s", f->path, strerror(errno));
    FNN_CHECK(got == 8, FNN_STATUS_IO,
              "%s: truncated: %lld bytes, less than the 8-byte header length a safetensors file starts with",
              f->path, (long long)got);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | prefix[i];
    FNN_CHECK(n >= 2 && n <= (uint64_t)ST_HEADER_MAX, FNN_STATUS_IO,
              "%s: header length %llu is not plausible (2 .. %d bytes): not a safetensors file, or corrupted",
              f->path, (unsigned long long)n, ST_HEADER_MAX);
    FNN_CHECK((int64_t)n <= size - 8, FNN_STATUS_IO,
              "%s: header length %llu runs past the end of the file (%lld bytes): truncated or corrupted", f->path,
              (unsigned long long)n, (long long)size);
    f->data_start = 8 + (int64_t)n;
    f->data_size = size - f->data_start;
    char *text = malloc(n + 1);
    FNN_CHECK(text, FNN_STATUS_OOM, "%s: out of memory for a %llu-byte header", f->path, (unsigned long long)n);
    int rc = FNN_STATUS_OK;
    cJSON *root = NULL;
    if (read_at(f->fd, text, (int64_t)n, 8, &got) != 0 || got != (int64_t)n) {
        rc = FNN_FAIL(FNN_STATUS_IO, "%s: cannot read the header: %s", f->path, got == (int64_t)n ? strerror(errno)
                      : "the file ended early");
        goto done;
    }
    text[n] = '\0';
    if (text[0] != '{') {
        rc = FNN_FAIL(FNN_STATUS_IO, "%s: the header does not start with '{': not a safetensors file, or corrupted",
                      f->path);
        goto done;
    }
    const char *end = NULL;
    pthread_mutex_lock(&json_lock);
    root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    pthread_mutex_unlock(&json_lock);
    if (!root) {
        rc = FNN_FAIL(FNN_STATUS_IO, "%s: the header is not valid JSON (at byte %lld of %llu): corrupted", f->path,
                      end ? (long long)(end - text) : -1LL, (unsigned long long)n);
        goto done;
    }
    for (const char *p = end; p < text + n; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            rc = FNN_FAIL(FNN_STATUS_IO, "%s: bytes after the header's JSON (at byte %lld of %llu): corrupted",
                          f->path, (long long)(p - text), (unsigned long long)n);
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        rc = FNN_FAIL(FNN_STATUS_IO, "%s: the header is not a JSON object", f->path);
        goto done;
    }
    const cJSON *crcs = NULL, *meta = NULL;
    for (const cJSON *it = root->child; it; it = it->next)
        if (strcmp(it->string, "__metadata__") == 0) {
            if (meta) { rc = FNN_FAIL(FNN_STATUS_IO, "%s: __metadata__ appears twice", f->path); goto done; }
            meta = it;
        }
    if (meta && (rc = read_metadata(f, meta, prefix, text, (int64_t)n, &crcs))) goto done;
    rc = read_entries(f, root, crcs);
done:
    cJSON_Delete(root);
    free(text);
    return rc;
}

int fnn_safetensors_open(fnn_safetensors **out, const char *path) {
    FNN_CHECK(out != NULL && path != NULL, FNN_STATUS_ARG, "safetensors_open: no path");
    *out = NULL;
    fnn_safetensors *f = calloc(1, sizeof *f);
    FNN_CHECK(f, FNN_STATUS_OOM, "%s: out of memory", path);
    f->fd = -1;
    f->path = dup_str(path);
    if (!f->path) { free(f); return FNN_FAIL(FNN_STATUS_OOM, "%s: out of memory", path); }
    int rc = open_file(f);
    if (rc) { fnn_safetensors_close(f); return rc; }
    *out = f;
    return FNN_STATUS_OK;
}

/* convert n elements of dtype d from raw (little-endian already swapped to host order) into dst */
static void widen(void *dst, const void *raw, int d, int64_t n) {
    float *y = dst;
    int64_t *z = dst;
    const uint16_t *h = raw;
    const double *f64 = raw;
    const int32_t *i32 = raw;
    switch (d) {
    case FNN_ST_F16: for (int64_t i = 0; i < n; i++) y[i] = f16_to_f32(h[i]); break;
    case FNN_ST_BF16: for (int64_t i = 0; i < n; i++) y[i] = bf16_to_f32(h[i]); break;
    case FNN_ST_F64: for (int64_t i = 0; i < n; i++) y[i] = (float)f64[i]; break;
    case FNN_ST_I32: for (int64_t i = 0; i < n; i++) z[i] = i32[i]; break;
    default: break;
    }
}

/* read tensor i's bytes, checking its CRC; into dst (fastnn's dtype) or only checked (dst NULL); keep:
 * a BF16 tensor's bytes as they are (a bfloat16 tensor) */
static int read_tensor(fnn_safetensors *f, int i, void *dst, bool keep) {
    const st_entry *e = &f->e[i];
    int esize = st_sizes[e->dtype], le = host_is_little_endian();
    int64_t bytes = e->end - e->begin, at = f->data_start + e->begin, got;
    int direct = dst && (e->dtype == FNN_ST_F32 || e->dtype == FNN_ST_I64 || (keep && e->dtype == FNN_ST_BF16));
    int osize = e->dtype == FNN_ST_I64 || e->dtype == FNN_ST_I32 ? 8 : 4;
    uLong crc = crc32(0L, Z_NULL, 0);
    if (direct) {
        if (read_at(f->fd, dst, bytes, at, &got) != 0 || got != bytes)
            return FNN_FAIL(FNN_STATUS_IO, "%s: cannot read tensor '%s': %s", f->path, e->name,
                            got == bytes ? strerror(errno) : "the file ended early (truncated while open?)");
        crc = crc_update(crc, dst, bytes);
        if (!le) swap_bytes(dst, bytes / esize, esize);
    } else if (bytes > 0) {
        int64_t chunk = bytes < ST_CHUNK ? bytes : ST_CHUNK;
        unsigned char *buf = fnn_alloc(fnn_make_device(FNN_DEVICE_CPU, 0), chunk);
        if (!buf) return fnn_last_status();
        for (int64_t done = 0; done < bytes; done += chunk) {
            int64_t len = bytes - done < chunk ? bytes - done : chunk;
            if (read_at(f->fd, buf, len, at + done, &got) != 0 || got != len) {
                fnn_free(fnn_make_device(FNN_DEVICE_CPU, 0), buf, chunk);
                return FNN_FAIL(FNN_STATUS_IO, "%s: cannot read tensor '%s': %s", f->path, e->name,
                                got == len ? strerror(errno) : "the file ended early (truncated while open?)");
            }
            crc = crc_update(crc, buf, len);
            if (dst) {
                if (!le) swap_bytes(buf, len / esize, esize);
                widen((char *)dst + done / esize * osize, buf, e->dtype, len / esize);
            }
        }
        fnn_free(fnn_make_device(FNN_DEVICE_CPU, 0), buf, chunk);
    }
    FNN_CHECK(!f->checksummed || (uint32_t)crc == e->crc, FNN_STATUS_IO,
              "%s: tensor '%s' fails its CRC-32 check (stored %08x, computed %08x): the data is corrupted",
              f->path, e->name, (unsigned)e->crc, (unsigned)crc);
    return FNN_STATUS_OK;
}

static int read_as(fnn_tensor *out, fnn_safetensors *f, int i, bool keep) {
    FNN_CHECK(out != NULL && f != NULL, FNN_STATUS_ARG, "safetensors_read: no file or output");
    fnn_tensor_init(out);
    FNN_CHECK(i >= 0 && i < f->n, FNN_STATUS_ARG, "%s: tensor %d out of range (the file has %d)", f->path, i + 1, f->n);
    const st_entry *e = &f->e[i];
    int dtype = e->dtype == FNN_ST_I64 || e->dtype == FNN_ST_I32 ? FNN_DTYPE_INT64
                : keep && e->dtype == FNN_ST_BF16 ? FNN_DTYPE_BFLOAT16 : FNN_DTYPE_FLOAT32;
    FNN_TRY(fnn_empty_dtype(out, e->ndim, e->shape, dtype));
    int rc = read_tensor(f, i, fnn_bytes(out), keep);
    if (rc) fnn_tensor_clear(out);
    return rc;
}
int fnn_safetensors_read(fnn_tensor *out, fnn_safetensors *f, int i) { return read_as(out, f, i, false); }
int fnn_safetensors_read_kept(fnn_tensor *out, fnn_safetensors *f, int i) { return read_as(out, f, i, true); }

int fnn_safetensors_verify(fnn_safetensors *f, int i) {
    FNN_CHECK(f != NULL, FNN_STATUS_ARG, "safetensors_verify: no file");
    FNN_CHECK(i >= 0 && i < f->n, FNN_STATUS_ARG, "%s: tensor %d out of range (the file has %d)", f->path, i + 1, f->n);
    return read_tensor(f, i, NULL, false);
}

/* ---- the writer ---- */

typedef struct save_item {
    const char *name;
    fnn_tensor cpu;          /* a contiguous CPU copy, when the tensor was not one already */
    const void *bytes;       /* contiguous CPU data */
    int64_t numel;
    int ndim;
    int64_t shape[FNN_MAX_DIMS];
    int st_dtype;
    bool src_bf16;           /* the tensor is bfloat16: its bytes are BF16 already */
    uint32_t crc;
} save_item;

/* the tensor's contiguous CPU bytes, copying (detached) when it lives elsewhere or is strided */
static int cpu_bytes(save_item *it, const fnn_tensor *t) {
    fnn_tensor_init(&it->cpu);
    if (fnn_device_type_of(t->device) == FNN_DEVICE_CPU && fnn_tensor_is_contiguous(t)) {
        it->bytes = fnn_bytes(t);
        return FNN_STATUS_OK;
    }
    fnn_tensor plain, moved;
    FNN_TRY(fnn_detach(&plain, t));
    int rc = fnn_to_device(&moved, &plain, fnn_make_device(FNN_DEVICE_CPU, 0));
    fnn_tensor_clear(&plain);
    if (rc) return rc;
    rc = fnn_materialize(&it->cpu, &moved);
    fnn_tensor_clear(&moved);
    if (rc) return rc;
    it->bytes = fnn_bytes(&it->cpu);
    return FNN_STATUS_OK;
}

static int add_str(cJSON *obj, const char *key, const char *value) {
    return cJSON_AddStringToObject(obj, key, value) != NULL;
}

/* the header text for these items (CRCs as written in items; the header CRC as zeros), padded
 * with spaces so the data starts 8-aligned; NULL on out of memory */
static char *header_text(int n, const save_item *items, int n_meta, const char *const *keys,
                         const char *const *values, int checksums, int64_t *len) {
    cJSON *root = cJSON_CreateObject(), *meta = NULL;
    int ok = root != NULL;
    if (ok && (n_meta > 0 || checksums)) ok = (meta = cJSON_AddObjectToObject(root, "__metadata__")) != NULL;
    for (int i = 0; ok && i < n_meta; i++) ok = add_str(meta, keys[i], values[i]);
    if (ok && checksums) ok = add_str(meta, HEADER_CRC_KEY, "00000000");
    char hex[9];
    for (int i = 0; ok && checksums && i < n; i++) {
        size_t klen = sizeof CRC_PREFIX + strlen(items[i].name);
        char *key = malloc(klen);
        ok = key != NULL;
        if (ok) {
            snprintf(key, klen, "%s%s", CRC_PREFIX, items[i].name);
            snprintf(hex, sizeof hex, "%08x", (unsigned)items[i].crc);
            ok = add_str(meta, key, hex);
        }
        free(key);
    }
    int64_t at = 0;
    for (int i = 0; ok && i < n; i++) {
        const save_item *it = &items[i];
        cJSON *e = cJSON_AddObjectToObject(root, it->name);
        ok = e && add_str(e, "dtype", st_names[it->st_dtype]);
        cJSON *sh = ok ? cJSON_AddArrayToObject(e, "shape") : NULL;
        ok = ok && sh;
        for (int d = 0; ok && d < it->ndim; d++) {
            cJSON *v = cJSON_CreateNumber((double)it->shape[d]);
            ok = v && cJSON_AddItemToArray(sh, v);
            if (!ok) cJSON_Delete(v);
        }
        int64_t bytes = it->numel * st_sizes[it->st_dtype];
        cJSON *off = ok ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
        ok = ok && off;
        if (ok) {
            cJSON *b = cJSON_CreateNumber((double)at), *en = cJSON_CreateNumber((double)(at + bytes));
            ok = b && en && cJSON_AddItemToArray(off, b) && cJSON_AddItemToArray(off, en);
            if (!ok) { cJSON_Delete(b); cJSON_Delete(en); }
        }
        at += bytes;
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) return NULL;
    size_t tl = strlen(text), padded = (tl + 7) / 8 * 8;
    char *out = realloc(text, padded + 1);
    if (!out) { free(text); return NULL; }
    memset(out + tl, ' ', padded - tl);
    out[padded] = '\0';
    *len = (int64_t)padded;
    return out;
}

/* write data of one item to fd, narrowing floats when asked; crc of the bytes written */
static int write_item(int fd, save_item *it, int le) {
    int esize = st_sizes[it->st_dtype];
    int64_t bytes = it->numel * esize;
    uLong crc = crc32(0L, Z_NULL, 0);
    if (bytes == 0) { it->crc = (uint32_t)crc; return 0; }
    if (le && (it->st_dtype == FNN_ST_F32 || it->st_dtype == FNN_ST_I64 || it->src_bf16)) {
        crc = crc_update(crc, it->bytes, bytes);
        it->crc = (uint32_t)crc;
        return write_all(fd, it->bytes, bytes);
    }
    int64_t per = ST_CHUNK / 8, src_size = it->st_dtype == FNN_ST_I64 ? 8 : it->src_bf16 ? 2 : 4;
    unsigned char *buf = fnn_alloc(fnn_make_device(FNN_DEVICE_CPU, 0), ST_CHUNK);
    if (!buf) return -2;
    int rc = 0;
    for (int64_t done = 0; done < it->numel && rc == 0; done += per) {
        int64_t m = it->numel - done < per ? it->numel - done : per;
        const unsigned char *src = (const unsigned char *)it->bytes + done * src_size;
        if (!it->src_bf16 && (it->st_dtype == FNN_ST_F16 || it->st_dtype == FNN_ST_BF16)) {
            uint16_t *h = (uint16_t *)(void *)buf;
            const float *x = (const float *)(const void *)src;
            if (it->st_dtype == FNN_ST_F16) for (int64_t k = 0; k < m; k++) h[k] = f32_to_f16(x[k]);
            else for (int64_t k = 0; k < m; k++) h[k] = f32_to_bf16(x[k]);
        } else {
            memcpy(buf, src, (size_t)(m * esize));
        }
        if (!le) swap_bytes(buf, m, esize);
        crc = crc_update(crc, buf, m * esize);
        rc = write_all(fd, buf, m * esize);
    }
    fnn_free(fnn_make_device(FNN_DEVICE_CPU, 0), buf, ST_CHUNK);
    it->crc = (uint32_t)crc;
    return rc;
}

static _Atomic unsigned long tmp_counter;

/* the directory part of path ("." when it has none) */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return dup_str(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) { memcpy(d, path, n); d[n] = '\0'; }
    return d;
}

static int validate_save(const char *path, int n, const char *const *names, const fnn_tensor *const *tensors,
                         int n_meta, const char *const *keys, const char *const *values, int float_dtype,
                         int checksums) {
    FNN_CHECK(path && *path, FNN_STATUS_ARG, "safetensors_save: no path");
    FNN_CHECK(n >= 0 && n_meta >= 0, FNN_STATUS_ARG, "%s: negative tensor or metadata count", path);
    FNN_CHECK(float_dtype == FNN_ST_F32 || float_dtype == FNN_ST_F16 || float_dtype == FNN_ST_BF16, FNN_STATUS_ARG,
              "%s: float dtype %s: floats are stored as F32, F16 or BF16", path, fnn_st_dtype_name(float_dtype));
    for (int i = 0; i < n; i++) {
        FNN_CHECK(names[i] && *names[i], FNN_STATUS_ARG, "%s: tensor %d has no name", path, i + 1);
        FNN_CHECK(strcmp(names[i], "__metadata__") != 0, FNN_STATUS_ARG, "%s: '__metadata__' cannot name a tensor",
                  path);
        const fnn_tensor *t = tensors[i];
        FNN_CHECK(t && t->ndim >= 0, FNN_STATUS_ARG, "%s: tensor '%s' is empty (no tensor)", path, names[i]);
        FNN_CHECK(!t->freed, FNN_STATUS_ARG, "%s: tensor '%s' was freed", path, names[i]);
        FNN_CHECK(t->dtype == FNN_DTYPE_FLOAT32 || t->dtype == FNN_DTYPE_INT64 || t->dtype == FNN_DTYPE_BFLOAT16,
                  FNN_STATUS_ARG, "%s: tensor '%s' has dtype %s, expected float32, bfloat16 or int64", path, names[i],
                  fnn_dtype_name(t->dtype));
    }
    for (int i = 0; i < n_meta; i++) {
        FNN_CHECK(keys[i] && values[i], FNN_STATUS_ARG, "%s: metadata entry %d has no key or value", path, i + 1);
        FNN_CHECK(strcmp(keys[i], HEADER_CRC_KEY) != 0 && strncmp(keys[i], CRC_PREFIX, sizeof CRC_PREFIX - 1) != 0,
                  FNN_STATUS_ARG, "%s: metadata key '%s' is reserved for the checksums", path, keys[i]);
        FNN_CHECK(checksums || strncmp(keys[i], "fdl.", 4) != 0, FNN_STATUS_ARG,
                  "%s: metadata key '%s': fdl. keys mark a checksummed file (save with checksums)", path, keys[i]);
    }
    /* names and keys unique: sorted copies */
    int m = n > n_meta ? n : n_meta;
    const char **sorted = malloc(sizeof(char *) * ((size_t)m + 1));
    FNN_CHECK(sorted, FNN_STATUS_OOM, "%s: out of memory", path);
    for (int pass = 0; pass < 2; pass++) {
        int k = pass ? n_meta : n;
        for (int i = 0; i < k; i++) sorted[i] = pass ? keys[i] : names[i];
        qsort(sorted, (size_t)k, sizeof(char *), by_name);
        for (int i = 1; i < k; i++)
            if (strcmp(sorted[i - 1], sorted[i]) == 0) {
                int rc = FNN_FAIL(FNN_STATUS_ARG, "%s: %s '%s' appears twice", path, pass ? "metadata key" : "tensor name",
                                  sorted[i]);
                free(sorted);
                return rc;
            }
    }
    free(sorted);
    return FNN_STATUS_OK;
}

int fnn_safetensors_save(const char *path, int n, const char *const *names, const fnn_tensor *const *tensors,
                         int n_meta, const char *const *keys, const char *const *values, int float_dtype,
                         int checksums) {
    FNN_TRY(validate_save(path, n, names, tensors, n_meta, keys, values, float_dtype, checksums));
    int le = host_is_little_endian(), rc = FNN_STATUS_OK, fd = -1, created = 0;
    save_item *items = calloc((size_t)n + 1, sizeof(save_item));
    char *dir = dir_of(path), *tmp = NULL, *text = NULL;
    size_t tlen = strlen(path) + 64;
    tmp = malloc(tlen);
    if (!items || !dir || !tmp) { rc = FNN_FAIL(FNN_STATUS_OOM, "%s: out of memory", path); goto done; }
    for (int i = 0; i < n; i++) fnn_tensor_init(&items[i].cpu);
    for (int i = 0; i < n; i++) {
        save_item *it = &items[i];
        it->name = names[i];
        it->numel = fnn_tensor_numel(tensors[i]);
        it->ndim = tensors[i]->ndim;
        for (int d = 0; d < it->ndim; d++) it->shape[d] = tensors[i]->shape[d];
        /* a bfloat16 tensor is stored as BF16 whatever the float type asked for float32 tensors */
        it->src_bf16 = tensors[i]->dtype == FNN_DTYPE_BFLOAT16;
        it->st_dtype = tensors[i]->dtype == FNN_DTYPE_INT64 ? FNN_ST_I64 : it->src_bf16 ? FNN_ST_BF16 : float_dtype;
        if ((rc = cpu_bytes(it, tensors[i]))) goto done;
    }
    int64_t hlen = 0;
    text = header_text(n, items, n_meta, keys, values, checksums, &hlen);
    if (!text) { rc = FNN_FAIL(FNN_STATUS_OOM, "%s: out of memory building the header", path); goto done; }

    /* the temporary file: beside the target (rename is atomic within one file system) */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(tmp, tlen, "%s/.%s.tmp.%ld.%lu", dir, base, (long)getpid(), (unsigned long)++tmp_counter);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        rc = FNN_FAIL(FNN_STATUS_IO, "%s: cannot create a temporary file in %s: %s", path, dir, strerror(errno));
        goto done;
    }
    created = 1;
    struct stat old;   /* a file being replaced keeps its permissions */
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode)) (void)fchmod(fd, old.st_mode & 07777);
    unsigned char prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    /* the header goes first as a placeholder (its CRCs are known once the data is written) */
    if (write_all(fd, prefix, 8) || write_all(fd, text, hlen)) goto io_error;
    for (int i = 0; i < n; i++) {
        int w = write_item(fd, &items[i], le);
        if (w == -2) { rc = fnn_last_status(); goto done; }
        if (w) goto io_error;
    }
    if (checksums) {
        int64_t len2 = 0;
        free(text);
        text = header_text(n, items, n_meta, keys, values, checksums, &len2);
        if (!text) { rc = FNN_FAIL(FNN_STATUS_OOM, "%s: out of memory building the header", path); goto done; }
        if (len2 != hlen) { rc = FNN_FAIL(FNN_STATUS_INTERNAL, "%s: header length changed (please report)", path); goto done; }
        static const char key[] = "\"" HEADER_CRC_KEY "\":\"";
        char *digits = strstr(text, key);
        if (!digits) { rc = FNN_FAIL(FNN_STATUS_INTERNAL, "%s: header checksum key missing (please report)", path); goto done; }
        digits += sizeof key - 1;
        uLong crc = crc32(crc32(0L, Z_NULL, 0), prefix, 8);
        crc = crc_update(crc, text, hlen);
        char hex[9];
        snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
        memcpy(digits, hex, 8);
        int64_t wrote = 0;
        while (wrote < hlen) {
            ssize_t w = pwrite(fd, text + wrote, (size_t)(hlen - wrote), (off_t)(8 + wrote));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) goto io_error;
            wrote += w;
        }
    }
    if (fsync(fd) != 0) goto io_error;
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) goto io_error;
    if (rename(tmp, path) != 0) {
        rc = FNN_FAIL(FNN_STATUS_IO, "%s: cannot replace it with the new file: %s", path, strerror(errno));
        goto done;
    }
    created = 0;   /* renamed: nothing to remove */
    /* the rename itself is durable once the directory is synced */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        int s = fsync(dfd), err = errno;
        close(dfd);
        if (s != 0 && err == EIO) rc = FNN_FAIL(FNN_STATUS_IO, "%s: written, but syncing %s failed: %s", path, dir,
                                              strerror(err));
    }
    goto done;
io_error:
    rc = FNN_FAIL(FNN_STATUS_IO, "%s: cannot write: %s (the earlier file, if any, is unchanged)", path,
                  strerror(errno));
done:
    if (fd >= 0) close(fd);
    if (created) unlink(tmp);
    if (items) for (int i = 0; i < n; i++) fnn_tensor_clear(&items[i].cpu);
    free(items);
    free(text);
    free(tmp);
    free(dir);
    return rc;
}

/* ================= JSON for Lua: cJSON's tree, walked through the ABI ================= */

fnn_json *fnn_json_parse(const char *text, size_t len) {
    if (!text) { FNN_FAIL(FNN_STATUS_ARG, "json: no text"); return NULL; }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    while (root && at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) at++;
    if (!root || at < len) {   /* invalid, or something after the value */
        cJSON_Delete(root);
        if (at > len) at = len;   /* on failure cJSON leaves `end` at the error */
        FNN_FAIL(FNN_STATUS_ARG, "json: not valid JSON near byte %zu of %zu", at + 1, len);
        return NULL;
    }
    return (fnn_json *)root;
}

void fnn_json_free(fnn_json *root) { cJSON_Delete((cJSON *)root); }

int fnn_json_type(const fnn_json *j) {
    const cJSON *c = (const cJSON *)j;
    if (!c || cJSON_IsNull(c)) return 0;
    if (cJSON_IsFalse(c)) return 1;
    if (cJSON_IsTrue(c)) return 2;
    if (cJSON_IsNumber(c)) return 3;
    if (cJSON_IsString(c)) return 4;
    if (cJSON_IsArray(c)) return 5;
    if (cJSON_IsObject(c)) return 6;
    return 0;
}

double fnn_json_number(const fnn_json *j) { return j ? ((const cJSON *)j)->valuedouble : 0; }
const char *fnn_json_string(const fnn_json *j) { return j ? cJSON_GetStringValue((const cJSON *)j) : NULL; }
int fnn_json_size(const fnn_json *j) { return j ? cJSON_GetArraySize((const cJSON *)j) : 0; }
const fnn_json *fnn_json_child(const fnn_json *j, int i) {
    return j && i >= 0 ? (const fnn_json *)cJSON_GetArrayItem((const cJSON *)j, i) : NULL;
}
const char *fnn_json_key(const fnn_json *j) { return j ? ((const cJSON *)j)->string : NULL; }
