/* download.c: fetching dataset files into the cache, and file digests.
 *
 * fnn_download(dest, mirrors, digest, ...) makes `dest` a verified copy of a remote file:
 *   - a dest already there whose digest matches is the answer (no network);
 *   - otherwise the mirrors are tried in order with libcurl (http/https only, redirects followed,
 *     connect and overall timeouts, a stall limit), into dest.part;
 *   - a dest.part left by an interrupted run is resumed with a Range request (a server that
 *     answers 200 instead of 206 simply restarts it);
 *   - the digest (OpenSSL's libcrypto, MD5 or SHA-256) is checked before the file is renamed
 *     into place, so a reader never sees a file that failed it; a mismatch empties dest.part
 *     and moves on to the next mirror; a cut transfer keeps dest.part for the next attempt;
 *   - dest.part is locked (flock) while in use, so two processes fetching the same file wait
 *     for each other instead of interleaving bytes.
 * Progress goes to stderr: a bar redrawn in place when stderr is a terminal, else one line per
 * file (library code prints nothing else). */
#include "internal.h"
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- digests ---- */

static const EVP_MD *digest_by_name(const char *algo) {
    if (strcmp(algo, "md5") == 0) return EVP_md5();
    if (strcmp(algo, "sha256") == 0) return EVP_sha256();
    return NULL;
}

/* hex (2 * digest size + 1 bytes) = the lowercase hex digest of the file at path */
int fnn_file_digest(const char *path, const char *algo, char *hex, int len) {
    FNN_CHECK(path && algo && hex, FNN_STATUS_ARG, "file_digest: expected a path, an algorithm and a buffer");
    const EVP_MD *md = digest_by_name(algo);
    FNN_CHECK(md != NULL, FNN_STATUS_ARG, "file_digest: algorithm '%s' not supported (md5 or sha256)", algo);
    int size = EVP_MD_get_size(md);
    FNN_CHECK(len >= 2 * size + 1, FNN_STATUS_ARG, "file_digest: a %s digest needs %d bytes of buffer, got %d",
              algo, 2 * size + 1, len);
    errno = 0;
    FILE *f = fopen(path, "rb");
    FNN_CHECK(f != NULL, FNN_STATUS_IO, "file_digest: %s: cannot open (%s)", path, strerror(errno));
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = FNN_STATUS_OK;
    if (!buf || !ctx || EVP_DigestInit_ex(ctx, md, NULL) != 1) {
        rc = FNN_FAIL(FNN_STATUS_OOM, "file_digest: cannot start a %s digest", algo);
        goto done;
    }
    size_t got;
    while ((got = fread(buf, 1, CHUNK, f)) > 0) {
        if (EVP_DigestUpdate(ctx, buf, got) != 1) {
            rc = FNN_FAIL(FNN_STATUS_INTERNAL, "file_digest: %s digest update failed", algo);
            goto done;
        }
    }
    if (ferror(f)) {
        rc = FNN_FAIL(FNN_STATUS_IO, "file_digest: %s: read error (%s)", path, strerror(errno));
        goto done;
    }
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx, out, &n) != 1) {
        rc = FNN_FAIL(FNN_STATUS_INTERNAL, "file_digest: %s digest failed", algo);
        goto done;
    }
    for (unsigned int i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", out[i]);
    hex[2 * n] = '\0';
done:
    EVP_MD_CTX_free(ctx);
    free(buf);
    fclose(f);
    return rc;
}

/* "md5:<32 hex>", "sha256:<64 hex>", or bare hex of either length -> algo, lowercase hex */
typedef struct { char algo[8]; char hex[2 * EVP_MAX_MD_SIZE + 1]; } digest_spec;

static int parse_digest(const char *text, digest_spec *d) {
    const char *colon = strchr(text, ':');
    const char *hex = colon ? colon + 1 : text;
    size_t n = strlen(hex);
    if (colon) {
        size_t alen = (size_t)(colon - text);
        FNN_CHECK(alen < sizeof d->algo, FNN_STATUS_ARG, "download: digest '%s': unknown algorithm", text);
        memcpy(d->algo, text, alen);
        d->algo[alen] = '\0';
    } else {
        snprintf(d->algo, sizeof d->algo, "%s", n == 32 ? "md5" : "sha256");
    }
    const EVP_MD *md = digest_by_name(d->algo);
    FNN_CHECK(md != NULL, FNN_STATUS_ARG, "download: digest '%s': algorithm '%s' not supported (md5 or sha256)",
              text, d->algo);
    FNN_CHECK(n == (size_t)(2 * EVP_MD_get_size(md)), FNN_STATUS_ARG,
              "download: digest '%s': a %s digest has %d hex digits, got %zu", text, d->algo, 2 * EVP_MD_get_size(md), n);
    for (size_t i = 0; i < n; i++) {
        char c = hex[i];
        if (c >= 'A' && c <= 'F') c = (char)(c - 'A' + 'a');
        FNN_CHECK((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'), FNN_STATUS_ARG,
                  "download: digest '%s': '%c' is not a hex digit", text, hex[i]);
        d->hex[i] = c;
    }
    d->hex[n] = '\0';
    return FNN_STATUS_OK;
}

/* 1: the file's digest matches, 0: it does not (got is filled), <0: error (message set) */
static int digest_matches(const char *path, const digest_spec *d, char *got, int len) {
    FNN_TRY(fnn_file_digest(path, d->algo, got, len));
    return strcmp(got, d->hex) == 0;
}

/* ---- paths ---- */

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* mkdir -p of the directory part of path */
static int make_parent_dirs(const char *path) {
    char dir[4096];
    FNN_CHECK(strlen(path) < sizeof dir, FNN_STATUS_ARG, "download: path too long: %s", path);
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return FNN_STATUS_OK;
    *slash = '\0';
    for (char *p = dir + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char keep = *p;
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return FNN_FAIL(FNN_STATUS_IO, "download: cannot create the directory %s (%s)", dir, strerror(errno));
            *p = keep;
            if (keep == '\0') break;
        }
    }
    return FNN_STATUS_OK;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- one transfer ---- */

enum { PROGRESS_QUIET = 0, PROGRESS_AUTO = 1, PROGRESS_BAR = 2, PROGRESS_LINE = 3 };

typedef struct {
    CURL *curl;
    int fd;
    int64_t offset;        /* bytes in dest.part when the request was made (its Range start) */
    int64_t written;       /* bytes this transfer wrote */
    bool checked;          /* the response code was looked at (first body bytes) */
    bool restarted;        /* the server ignored the Range: the part was emptied */
    int64_t total;         /* whole file size once the server said (-1 before) */
    int progress;
    const char *name;
    double t0, last_draw;
    char err[256];
} transfer;

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx) {
    transfer *x = ctx;
    size_t n = size * nmemb;
    if (!x->checked) {
        x->checked = true;
        long code = 0;
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
        if (x->offset > 0 && code != 206) {   /* a whole file, not the rest we asked for: start over */
            if (ftruncate(x->fd, 0) != 0 || lseek(x->fd, 0, SEEK_SET) < 0) {
                snprintf(x->err, sizeof x->err, "cannot restart the partial file (%s)", strerror(errno));
                return 0;
            }
            x->offset = 0;
            x->restarted = true;
        }
    }
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(x->fd, data + done, n - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            snprintf(x->err, sizeof x->err, "cannot write the file (%s)", strerror(errno));
            return 0;
        }
        done += (size_t)w;
    }
    x->written += (int64_t)n;
    return n;
}

static void draw_bar(transfer *x, int64_t have, int64_t total, bool final) {
    double dt = now_s() - x->t0;
    double rate = dt > 0 ? (double)(have - x->offset) / dt / 1e6 : 0;
    if (total > 0) {
        enum { WIDTH = 30 };
        int fill = (int)((double)WIDTH * (double)have / (double)total);
        if (fill > WIDTH) fill = WIDTH;
        char bar[WIDTH + 1];
        for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '=' : ' ';
        bar[WIDTH] = '\0';
        fprintf(stderr, "\r%-28s [%s] %3d%% %7.1f/%.1f MB %6.1f MB/s", x->name, bar,
                (int)(100.0 * (double)have / (double)total), (double)have / 1e6, (double)total / 1e6, rate);
    } else {
        fprintf(stderr, "\r%-28s %7.1f MB %6.1f MB/s", x->name, (double)have / 1e6, rate);
    }
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)ultotal; (void)ulnow;
    transfer *x = ctx;
    if (x->progress != PROGRESS_BAR || dlnow <= 0) return 0;
    if (dltotal > 0) x->total = x->offset + (int64_t)dltotal;
    double t = now_s();
    if (t - x->last_draw < 0.1) return 0;   /* ten redraws a second at most */
    x->last_draw = t;
    draw_bar(x, x->offset + (int64_t)dlnow, x->total, false);
    return 0;
}

/* GET url into fd, resuming from what fd holds. 0, or -1 with why in reason (HTTP status in *code) */
static int fetch(const char *url, int fd, double connect_timeout, double timeout, int progress, const char *name,
                 long *code, char *reason, size_t reason_len) {
    *code = 0;
    struct stat st;
    if (fstat(fd, &st) != 0) { snprintf(reason, reason_len, "cannot stat the partial file (%s)", strerror(errno)); return -1; }
    transfer x = {.fd = fd, .offset = (int64_t)st.st_size, .total = -1, .progress = progress, .name = name,
                  .t0 = now_s()};
    if (lseek(fd, 0, SEEK_END) < 0) { snprintf(reason, reason_len, "cannot seek (%s)", strerror(errno)); return -1; }
    x.curl = curl_easy_init();
    if (!x.curl) { snprintf(reason, reason_len, "cannot start libcurl"); return -1; }
    CURL *c = x.curl;
    char range[32];
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);     /* no SIGALRM: the caller may have threads */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_timeout * 1000));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);    /* a stalled server: under 1 byte/s for 30 s */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "fastnn-lua/0.1");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, progress == PROGRESS_BAR ? 0L : 1L);
    if (x.offset > 0) {
        snprintf(range, sizeof range, "%lld-", (long long)x.offset);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    }
    char curl_err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
    CURLcode r = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    if (progress == PROGRESS_BAR && x.written > 0)
        draw_bar(&x, x.offset + x.written, r == CURLE_OK ? x.offset + x.written : x.total, true);
    curl_easy_cleanup(c);
    if (r == CURLE_OK) return 0;
    if (x.err[0]) snprintf(reason, reason_len, "%s", x.err);
    else if (r == CURLE_HTTP_RETURNED_ERROR) snprintf(reason, reason_len, "HTTP %ld", *code);
    else if (r == CURLE_OPERATION_TIMEDOUT)
        snprintf(reason, reason_len, "timed out (%s; connect timeout %g s, overall %g s)",
                 curl_err[0] ? curl_err : curl_easy_strerror(r), connect_timeout, timeout);
    else snprintf(reason, reason_len, "%s", curl_err[0] ? curl_err : curl_easy_strerror(r));
    return -1;
}

/* ---- the entry point ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;   /* written once, under curl_once */
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* open and lock dest.part; returns the fd, or -1 with the message set. The lock is taken on the
 * file now at that path: a process that waited may find the path renamed away meanwhile. */
static int open_part(const char *part) {
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return FNN_FAIL(FNN_STATUS_IO, "download: cannot create %s (%s)", part, strerror(errno)), -1;
        if (flock(fd, LOCK_EX) != 0) {
            close(fd);
            return FNN_FAIL(FNN_STATUS_IO, "download: cannot lock %s (%s)", part, strerror(errno)), -1;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(part, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) return fd;
        close(fd);   /* another process finished and renamed it: open the new path */
    }
    return FNN_FAIL(FNN_STATUS_IO, "download: %s keeps changing under another process", part), -1;
}

int fnn_download(const char *dest, int n_urls, const char *const *urls, const char *digest, double connect_timeout,
                 double timeout, int progress) {
    FNN_CHECK(dest && dest[0], FNN_STATUS_ARG, "download: expected a destination path");
    FNN_CHECK(n_urls >= 0 && (n_urls == 0 || urls), FNN_STATUS_ARG, "download: %d mirrors", n_urls);
    for (int i = 0; i < n_urls; i++) FNN_CHECK(urls[i] && urls[i][0], FNN_STATUS_ARG, "download: mirror %d is empty", i + 1);
    FNN_CHECK(connect_timeout > 0 && timeout > 0, FNN_STATUS_ARG,
              "download: timeouts must be positive (connect %g s, overall %g s)", connect_timeout, timeout);
    FNN_CHECK(progress >= PROGRESS_QUIET && progress <= PROGRESS_LINE, FNN_STATUS_ARG,
              "download: progress mode %d (0 quiet, 1 auto, 2 bar, 3 line)", progress);
    if (progress == PROGRESS_AUTO) progress = isatty(STDERR_FILENO) ? PROGRESS_BAR : PROGRESS_LINE;
    digest_spec d = {{0}, {0}};
    if (digest && digest[0]) FNN_TRY(parse_digest(digest, &d));
    const bool check = d.algo[0] != '\0';
    char got[sizeof d.hex];

    /* the cache: a verified file is the answer */
    if (file_exists(dest)) {
        if (!check) return FNN_STATUS_OK;
        int m = digest_matches(dest, &d, got, (int)sizeof got);
        if (m < 0) return m;
        if (m == 1) return FNN_STATUS_OK;
        if (unlink(dest) != 0)
            return FNN_FAIL(FNN_STATUS_IO, "download: %s fails its %s check and cannot be removed (%s)", dest, d.algo,
                            strerror(errno));
    }
    FNN_CHECK(n_urls > 0, FNN_STATUS_ARG, "download: %s is not there and no mirror was given", dest);
    FNN_TRY(make_parent_dirs(dest));
    char part[4096 + 8];
    FNN_CHECK(strlen(dest) < 4096, FNN_STATUS_ARG, "download: path too long: %s", dest);
    snprintf(part, sizeof part, "%s.part", dest);
    pthread_once(&curl_once, curl_init);
    FNN_CHECK(curl_init_rc == CURLE_OK, FNN_STATUS_INTERNAL, "download: libcurl did not initialise (%s)",
              curl_easy_strerror(curl_init_rc));

    int fd = open_part(part);
    if (fd < 0) return fnn_last_status();
    if (file_exists(dest)) {   /* another process fetched it while we waited for the lock */
        int m = check ? digest_matches(dest, &d, got, (int)sizeof got) : 1;
        if (m == 1) { close(fd); return FNN_STATUS_OK; }
    }

    char why[1024] = "";   /* one "url: reason" per failed mirror */
    size_t why_len = 0;
    const char *name = base_name(dest);
    for (int i = 0; i < n_urls; i++) {
        const char *url = urls[i];
        char reason[320];
        long code = 0;
        double t0 = now_s();
        int r = fetch(url, fd, connect_timeout, timeout, progress, name, &code, reason, sizeof reason);
        if (r != 0 && code == 416) {
            /* "range not satisfiable": the partial file may be the whole file already */
            r = check ? 0 : -1;
            if (!check) snprintf(reason, sizeof reason, "HTTP 416 on resume, and no digest to check the file");
        }
        if (r == 0 && check) {
            int m = digest_matches(part, &d, got, (int)sizeof got);
            if (m < 0) { close(fd); return m; }
            if (m == 0) {
                snprintf(reason, sizeof reason, "%s mismatch (got %s, expected %s)", d.algo, got, d.hex);
                if (ftruncate(fd, 0) != 0) {}   /* nothing of it is worth resuming */
                r = -1;
            }
        }
        if (r == 0) {
            struct stat st;
            double mb = fstat(fd, &st) == 0 ? (double)st.st_size / 1e6 : 0;
            if (fsync(fd) != 0 || rename(part, dest) != 0) {
                int e = errno;
                close(fd);
                return FNN_FAIL(FNN_STATUS_IO, "download: cannot move %s into place (%s)", part, strerror(e));
            }
            close(fd);
            if (progress == PROGRESS_LINE) {
                fprintf(stderr, "download: %s -> %s (%.1f MB, %.1f s)\n", url, dest, mb, now_s() - t0);
                fflush(stderr);
            }
            return FNN_STATUS_OK;
        }
        if (progress != PROGRESS_QUIET) {
            fprintf(stderr, "download: %s failed: %s%s\n", url, reason, i + 1 < n_urls ? "; trying the next mirror" : "");
            fflush(stderr);
        }
        if (why_len < sizeof why)
            why_len += (size_t)snprintf(why + why_len, sizeof why - why_len, "%s%s: %s", i ? "; " : "", url, reason);
    }
    /* keep a partial transfer for the next attempt; an empty part is no use to anyone */
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size == 0) unlink(part);
    close(fd);
    return FNN_FAIL(FNN_STATUS_IO, "download: cannot fetch %s from %s: %s", name,
                    n_urls == 1 ? "its mirror" : "any mirror", why);
}
