/* prefetch.c: a DataLoader's background thread. It assembles the next `depth` batches of one pass
 * while the caller trains on the current one, for the datasets the core can read without Lua:
 * rows of tensors (TensorDataset, IDX images), windows of a token tensor (TextDataset), and
 * picture files decoded and transformed (ImageFolder, fnn_image_take in core/io/image_folder.c). The
 * batches are made by the very functions the main-thread path calls (fnn_take_rows,
 * fnn_take_windows, fnn_image_take) over the same order, so they are the same batches, bit for bit.
 *
 * Who makes a batch. Batches are claimed in order, up to `depth` ahead of the one the caller
 * takes next, by the worker and by the caller itself: when the caller asks for a batch that is not
 * ready, it makes the next unclaimed one rather than sleep, so a loop that only waits for data gets
 * both threads gathering. The worker runs under SCHED_IDLE: it uses a core nobody else wants
 * (between the training step's parallel kernels, while Lua runs single-threaded) and never preempts
 * the step's own threads, which would stall OpenBLAS at its barriers. The price of idle priority
 * is that the worker can be starved in the middle of a batch the caller needs; the caller then waits
 * briefly (twice what a batch takes it) and makes that batch itself, and the worker's late copy is
 * dropped. So prefetch can take work off the training loop but never make it wait long.
 *
 * Workers. A pass has 1..64 of them (loader:prefetch(k, {workers = n})), all claiming from the
 * same counter: batch k is made by whoever claims it, from the same ids and the same seed, so the
 * batches do not depend on how many workers there are. Each worker has its own record (the batch it
 * is on, whether the caller took that batch over, its trash slot), so the caller can steal from any.
 *
 * Threading: one mutex, two condition variables. A worker never calls into Lua and never frees a
 * tensor: what it makes goes into a slot (or, when the caller made that batch itself, its trash),
 * and the caller's thread takes or clears it. So per-thread allocator lists stay
 * with the thread that uses them, and an abandoned pass leaves nothing behind once freed.
 * fnn_prefetch_free stops the workers (each finishes at most the batch it is making), joins them and
 * drops the batches not taken. */
#define _GNU_SOURCE   /* SCHED_IDLE */
#include "internal.h"
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    fnn_tensor x, y;
    bool ready;          /* made (or failed), waiting for the caller */
    int buf;             /* reuse: the pool buffer it is written in (-1: fresh tensors) */
    int status;          /* FNN_STATUS_OK, or the failure (msg) */
    char msg[1024];
} slot;

/* one worker thread's record; its fields other than thread are read and written under the lock */
typedef struct {
    struct fnn_prefetch *p;
    pthread_t thread;
    int64_t k;                    /* the batch it is making (-1: none) */
    bool stolen;                  /* the caller made batch k itself meanwhile */
    fnn_tensor trash_x, trash_y;  /* its copy of a stolen batch, for the caller to clear */
} worker_rec;

struct fnn_prefetch {
    worker_rec *workers;
    int nworkers, started;
    pthread_mutex_t lock;
    pthread_cond_t filled, emptied;   /* filled runs on CLOCK_MONOTONIC (timed waits) */
    int kind;
    fnn_tensor a, b;     /* the dataset's tensors (our own references); b empty when absent */
    int64_t context, stride;
    int64_t *order, n, batch, nbatches;
    int depth;
    slot *ring;
    int64_t claimed, consumed;    /* batches claimed by a maker / taken by the caller */
    double make_s;                /* how long the caller took for its last batch (seconds) */
    fnn_image_set *set;           /* IMAGES: the pictures (our own reference) */
    uint64_t *seeds;              /* IMAGES: each batch's seed for its random transforms */
    bool stop;                    /* the caller is freeing: the worker leaves */
    bool failed;                  /* a batch failed: nothing more is claimed */
    /* reuse: a pool of buffers each batch is written into. In use at once: the batch the caller
     * holds, the depth batches claimed ahead of it, and the batches of workers the caller stole
     * from, still writing (at most one each): depth + 1 + workers. A batch is given the first
     * free buffer, so the pass cycles through the fewest (and warmest). */
    bool reuse;
    int npool, held;              /* held: the buffer of the batch the caller holds (-1: none) */
    fnn_tensor *pool_x, *pool_y;
    bool *busy;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void slot_init(slot *s) {
    fnn_tensor_init(&s->x);
    fnn_tensor_init(&s->y);
    s->ready = false;
    s->status = FNN_STATUS_OK;
    s->buf = -1;
}

/* under the lock: a free pool buffer, marked busy; -1 without reuse (or, never by the count
 * above, none free: the batch is then made in fresh tensors) */
static int acquire(fnn_prefetch *p) {
    for (int i = 0; p->reuse && i < p->npool; i++)
        if (!p->busy[i]) { p->busy[i] = true; return i; }
    return -1;
}
static void release(fnn_prefetch *p, int buf) {   /* under the lock */
    if (buf >= 0 && p->busy) p->busy[buf] = false;
}

/* batch k of the pass into s (no lock held: s belongs to whoever claimed batch k) */
static void make_batch(fnn_prefetch *p, int64_t k, slot *s) {
    int64_t at = k * p->batch;
    int64_t m = p->n - at < p->batch ? p->n - at : p->batch;
    const int64_t *ids = p->order + at;
    int rc;
    if (p->kind == FNN_PREFETCH_IMAGES) {
        rc = fnn_image_take(&s->x, &s->y, p->set, m, ids, p->seeds[k]);
    } else if (s->buf >= 0) {   /* reuse: rows or windows into a pool buffer */
        rc = fnn_take_batch_into(&s->x, &s->y, &p->pool_x[s->buf], &p->pool_y[s->buf], p->kind, &p->a,
                                 p->b.ndim >= 0 ? &p->b : NULL, p->context, p->stride, m, ids, p->batch);
    } else if (p->kind == FNN_PREFETCH_WINDOWS) {
        rc = fnn_take_windows(&s->x, &s->y, &p->a, p->context, p->stride, m, ids);
    } else {
        rc = fnn_take_rows(&s->x, &p->a, m, ids);
        if (rc == FNN_STATUS_OK && p->b.ndim >= 0) rc = fnn_take_rows(&s->y, &p->b, m, ids);
    }
    s->status = rc;
    if (rc != FNN_STATUS_OK) snprintf(s->msg, sizeof s->msg, "%s", fnn_last_error());
}

/* under the lock: claim the next batch if one is left and its slot is free; -1 if not */
static int64_t claim(fnn_prefetch *p) {
    if (p->stop || p->failed || p->claimed >= p->nbatches || p->claimed - p->consumed >= p->depth) return -1;
    return p->claimed++;
}

/* under the lock: put a made batch k into its slot and tell the caller */
static void publish(fnn_prefetch *p, int64_t k, const slot *made) {
    slot *s = &p->ring[k % p->depth];
    s->x = made->x;
    s->y = made->y;
    s->status = made->status;
    s->buf = made->buf;
    if (made->status != FNN_STATUS_OK) {
        memcpy(s->msg, made->msg, sizeof s->msg);
        p->failed = true;
    }
    s->ready = true;
    pthread_cond_broadcast(&p->filled);
}

/* under the lock: the worker making batch k, or NULL */
static worker_rec *maker_of(fnn_prefetch *p, int64_t k) {
    for (int i = 0; i < p->started; i++)
        if (p->workers[i].k == k) return &p->workers[i];
    return NULL;
}

static void *worker(void *arg) {
    worker_rec *w = arg;
    fnn_prefetch *p = w->p;
    struct sched_param idle = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);   /* refused: stays at normal priority */
    fnn_thread_serial();   /* its gathers and decodes on this thread alone: the step has the cores */
    slot made;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        /* a late copy still in its trash: wait until the caller drops it (one trash slot suffices) */
        bool trash = w->trash_x.ndim >= 0 || w->trash_y.ndim >= 0;
        int64_t k = trash ? -1 : claim(p);
        if (k < 0) {
            if (p->stop || p->failed || p->claimed >= p->nbatches) break;
            pthread_cond_wait(&p->emptied, &p->lock);   /* the ring is full, or the trash */
            continue;
        }
        w->k = k;
        int buf = acquire(p);
        pthread_mutex_unlock(&p->lock);
        slot_init(&made);
        made.buf = buf;
        make_batch(p, k, &made);
        /* a dataset on a GPU: this thread gathered the batch on its own stream, which the caller's
         * kernels are not ordered after, so the worker waits for its stream (the caller never does).
         * Also after a failure: a gather already queued (x before a failed y) still reads the dataset,
         * which the caller may free, and reuse in its own stream order, once the pass ends */
        for (int t = 0; t < 2; t++) {
            const fnn_tensor *d = t == 0 ? &p->a : &p->b;
            if (d->ndim < 0 || fnn_device_type_of(d->device) == FNN_DEVICE_CPU) continue;
            const fnn_backend *be = fnn_backend_for(d->device);
            int src = be && be->synchronize ? be->synchronize(fnn_device_ordinal(d->device), 1) : FNN_STATUS_OK;
            if (src && made.status == FNN_STATUS_OK) {
                made.status = src;
                snprintf(made.msg, sizeof made.msg, "%s", fnn_last_error());
            }
        }
        pthread_mutex_lock(&p->lock);
        w->k = -1;
        if (w->stolen) {   /* the caller made it meanwhile: ours goes to the trash */
            release(p, made.buf);   /* written: its buffer is free again (the trash holds views) */
            w->trash_x = made.x;
            w->trash_y = made.y;
            w->stolen = false;
            pthread_cond_broadcast(&p->filled);
        } else {
            publish(p, k, &made);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void prefetch_release(fnn_prefetch *p) {   /* everything but the thread */
    if (p->ring)
        for (int i = 0; i < p->depth; i++) {
            fnn_tensor_clear(&p->ring[i].x);
            fnn_tensor_clear(&p->ring[i].y);
        }
    if (p->workers)
        for (int i = 0; i < p->nworkers; i++) {
            fnn_tensor_clear(&p->workers[i].trash_x);
            fnn_tensor_clear(&p->workers[i].trash_y);
        }
    for (int i = 0; p->pool_x && i < p->npool; i++) {
        fnn_tensor_clear(&p->pool_x[i]);
        fnn_tensor_clear(&p->pool_y[i]);
    }
    free(p->pool_x);
    free(p->pool_y);
    free(p->busy);
    free(p->workers);
    free(p->ring);
    free(p->order);
    free(p->seeds);
    fnn_image_set_free(p->set);
    fnn_tensor_clear(&p->a);
    fnn_tensor_clear(&p->b);
    free(p);
}

/* p's common fields, its order, ring and worker records; p is released on failure */
static int prefetch_init(fnn_prefetch *p, int kind, int64_t n, const int64_t *order, int64_t batch, int depth,
                         int workers) {
    fnn_tensor_init(&p->a);
    fnn_tensor_init(&p->b);
    p->kind = kind;
    p->n = n;
    p->batch = batch;
    p->nbatches = (n + batch - 1) / batch;
    p->depth = depth;
    p->nworkers = workers;
    p->held = -1;
    p->order = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    p->ring = calloc((size_t)depth, sizeof(slot));
    p->workers = calloc((size_t)workers, sizeof(worker_rec));
    if (!p->order || !p->ring || !p->workers) {
        prefetch_release(p);
        return FNN_FAIL(FNN_STATUS_OOM, "prefetch: out of memory for %lld ids", (long long)n);
    }
    for (int i = 0; i < depth; i++) slot_init(&p->ring[i]);
    for (int i = 0; i < workers; i++) {
        worker_rec *w = &p->workers[i];
        w->p = p;
        w->k = -1;
        fnn_tensor_init(&w->trash_x);
        fnn_tensor_init(&w->trash_y);
    }
    if (n > 0) memcpy(p->order, order, sizeof(int64_t) * (size_t)n);
    return FNN_STATUS_OK;
}

static void stop_and_join(fnn_prefetch *p) {
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->emptied);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->filled);
    pthread_cond_destroy(&p->emptied);
}

/* start p's workers; p is released on failure (the ones started are stopped first) */
static int prefetch_start(fnn_prefetch *p, fnn_prefetch **out) {
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->filled, &monotonic);
    pthread_cond_init(&p->emptied, NULL);
    pthread_condattr_destroy(&monotonic);
    /* the worker takes no signals: Ctrl-C stays with the thread that runs Lua */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = 0;
    pthread_mutex_lock(&p->lock);   /* a worker reads p->started (maker_of) only under the lock */
    for (int i = 0; i < p->nworkers && e == 0; i++) {
        e = pthread_create(&p->workers[i].thread, NULL, worker, &p->workers[i]);
        if (e == 0) p->started++;
    }
    pthread_mutex_unlock(&p->lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        stop_and_join(p);
        prefetch_release(p);
        return FNN_FAIL(FNN_STATUS_INTERNAL, "prefetch: cannot start loader thread %d of %d (error %d)", p->started + 1,
                        p->nworkers, e);
    }
    *out = p;
    return FNN_STATUS_OK;
}

static int prefetch_new_rows(fnn_prefetch **out, int kind, const fnn_tensor *a, const fnn_tensor *b, int64_t context,
                             int64_t stride, int64_t n, const int64_t *order, int64_t batch, int depth, int workers,
                             bool reuse) {
    FNN_CHECK(out != NULL, FNN_STATUS_ARG, "prefetch: expected an out pointer");
    *out = NULL;
    FNN_CHECK(kind == FNN_PREFETCH_ROWS || kind == FNN_PREFETCH_WINDOWS, FNN_STATUS_ARG,
              "prefetch: unknown dataset kind %d", kind);
    FNN_CHECK(a != NULL, FNN_STATUS_ARG, "prefetch: expected the dataset's tensor");
    FNN_TRY(fnn_check_input_any("prefetch", a));
    if (b) FNN_TRY(fnn_check_input_any("prefetch", b));
    FNN_CHECK(n >= 0 && (n == 0 || order != NULL), FNN_STATUS_ARG, "prefetch: %lld ids but no order", (long long)n);
    FNN_CHECK(batch >= 1, FNN_STATUS_ARG, "prefetch: batch size %lld, expected >= 1", (long long)batch);
    FNN_CHECK(depth >= 1 && depth <= 1024, FNN_STATUS_ARG, "prefetch: depth %d, expected 1..1024", depth);
    FNN_CHECK(workers >= 1 && workers <= FNN_PREFETCH_MAX_WORKERS, FNN_STATUS_ARG,
              "prefetch: %d workers, expected 1..%d", workers, FNN_PREFETCH_MAX_WORKERS);
    fnn_prefetch *p = calloc(1, sizeof *p);
    FNN_CHECK(p != NULL, FNN_STATUS_OOM, "prefetch: out of memory");
    FNN_TRY(prefetch_init(p, kind, n, order, batch, depth, workers));
    p->context = context;
    p->stride = stride;
    if (reuse) {
        p->reuse = true;
        p->npool = depth + 1 + workers;
        p->pool_x = calloc((size_t)p->npool, sizeof(fnn_tensor));
        p->pool_y = calloc((size_t)p->npool, sizeof(fnn_tensor));
        p->busy = calloc((size_t)p->npool, sizeof(bool));
        if (!p->pool_x || !p->pool_y || !p->busy) {
            free(p->pool_x); free(p->pool_y); p->pool_x = p->pool_y = NULL;   /* nothing in them to clear */
            prefetch_release(p);
            return FNN_FAIL(FNN_STATUS_OOM, "prefetch: out of memory");
        }
        for (int i = 0; i < p->npool; i++) {
            fnn_tensor_init(&p->pool_x[i]);
            fnn_tensor_init(&p->pool_y[i]);
        }
    }
    int rc = fnn_tensor_ref(&p->a, a);
    if (rc == FNN_STATUS_OK && b) rc = fnn_tensor_ref(&p->b, b);
    if (rc != FNN_STATUS_OK) { prefetch_release(p); return rc; }
    return prefetch_start(p, out);
}

int fnn_prefetch_new(fnn_prefetch **out, int kind, const fnn_tensor *a, const fnn_tensor *b, int64_t context,
                     int64_t stride, int64_t n, const int64_t *order, int64_t batch, int depth, int workers) {
    return prefetch_new_rows(out, kind, a, b, context, stride, n, order, batch, depth, workers, false);
}

int fnn_prefetch_new_reuse(fnn_prefetch **out, int kind, const fnn_tensor *a, const fnn_tensor *b, int64_t context,
                           int64_t stride, int64_t n, const int64_t *order, int64_t batch, int depth, int workers) {
    return prefetch_new_rows(out, kind, a, b, context, stride, n, order, batch, depth, workers, true);
}

int fnn_prefetch_new_images(fnn_prefetch **out, fnn_image_set *set, int64_t n, const int64_t *order, int64_t batch,
                            int depth, int workers, const uint64_t *seeds) {
    FNN_CHECK(out != NULL, FNN_STATUS_ARG, "prefetch: expected an out pointer");
    *out = NULL;
    FNN_CHECK(set != NULL, FNN_STATUS_ARG, "prefetch: expected the pictures");
    FNN_CHECK(n >= 0 && (n == 0 || order != NULL), FNN_STATUS_ARG, "prefetch: %lld ids but no order", (long long)n);
    FNN_CHECK(batch >= 1, FNN_STATUS_ARG, "prefetch: batch size %lld, expected >= 1", (long long)batch);
    FNN_CHECK(depth >= 1 && depth <= 1024, FNN_STATUS_ARG, "prefetch: depth %d, expected 1..1024", depth);
    FNN_CHECK(workers >= 1 && workers <= FNN_PREFETCH_MAX_WORKERS, FNN_STATUS_ARG,
              "prefetch: %d workers, expected 1..%d", workers, FNN_PREFETCH_MAX_WORKERS);
    int64_t nb = (n + batch - 1) / batch;
    FNN_CHECK(nb == 0 || seeds, FNN_STATUS_ARG, "prefetch: expected a seed per batch");
    fnn_prefetch *p = calloc(1, sizeof *p);
    FNN_CHECK(p != NULL, FNN_STATUS_OOM, "prefetch: out of memory");
    FNN_TRY(prefetch_init(p, FNN_PREFETCH_IMAGES, n, order, batch, depth, workers));
    p->set = fnn_image_set_ref(set);
    p->seeds = malloc(sizeof(uint64_t) * (size_t)(nb > 0 ? nb : 1));
    if (!p->seeds) { prefetch_release(p); return FNN_FAIL(FNN_STATUS_OOM, "prefetch: out of memory"); }
    if (nb) memcpy(p->seeds, seeds, sizeof(uint64_t) * (size_t)nb);
    return prefetch_start(p, out);
}

/* under the lock: the caller makes claimed batch k itself into *made, timing it; the lock is
 * dropped meanwhile */
static void caller_make(fnn_prefetch *p, int64_t k, slot *made) {
    int buf = acquire(p);
    pthread_mutex_unlock(&p->lock);
    slot_init(made);
    made->buf = buf;
    double t0 = now_s();
    make_batch(p, k, made);
    double dt = now_s() - t0;
    pthread_mutex_lock(&p->lock);
    p->make_s = dt;
}

/* hand the made batch s over to the caller's headers; under the lock */
static int hand_over(fnn_prefetch *p, slot *s, fnn_tensor *inputs, fnn_tensor *targets) {
    int rc = s->status;
    if (rc == FNN_STATUS_OK) {
        *inputs = s->x;      /* move the headers: the references go with them */
        *targets = s->y;
        p->held = s->buf;    /* not written again until the caller asks for the next batch */
    } else {
        release(p, s->buf);
        fnn_tensor_clear(&s->x);
        fnn_tensor_clear(&s->y);
        FNN_FAIL(rc, "%s", s->msg);
        p->failed = true;
    }
    fnn_tensor_init(&s->x);
    fnn_tensor_init(&s->y);
    s->ready = false;
    s->buf = -1;
    p->consumed = rc == FNN_STATUS_OK ? p->consumed + 1 : p->nbatches;   /* nothing after a failure */
    pthread_cond_broadcast(&p->emptied);   /* every worker may wait on it */
    return rc;
}

int fnn_prefetch_next(fnn_prefetch *p, fnn_tensor *inputs, fnn_tensor *targets) {
    FNN_CHECK(p && inputs && targets, FNN_STATUS_ARG, "prefetch_next: expected a loader and two headers");
    fnn_tensor_init(inputs);
    fnn_tensor_init(targets);
    slot made;
    pthread_mutex_lock(&p->lock);
    release(p, p->held);   /* the batch handed over last is over: its buffer may be written again */
    p->held = -1;
    /* the late copies of stolen batches are ours to drop (rare: dropped here, under the lock) */
    bool dropped = false;
    for (int i = 0; i < p->started; i++) {
        worker_rec *w = &p->workers[i];
        if (w->trash_x.ndim < 0 && w->trash_y.ndim < 0) continue;
        fnn_tensor_clear(&w->trash_x);
        fnn_tensor_clear(&w->trash_y);
        dropped = true;
    }
    if (dropped) pthread_cond_broadcast(&p->emptied);
    int rc = FNN_STATUS_OK;
    while (p->consumed < p->nbatches) {
        int64_t c = p->consumed;
        slot *s = &p->ring[c % p->depth];
        if (c < p->claimed && s->ready) { rc = hand_over(p, s, inputs, targets); break; }
        if (p->failed && c >= p->claimed) break;
        int64_t k = claim(p);   /* not ready: make the next batch here instead of waiting idle */
        if (k >= 0) {
            caller_make(p, k, &made);
            if (k == c) { rc = hand_over(p, &made, inputs, targets); break; }
            publish(p, k, &made);
            continue;
        }
        worker_rec *w = maker_of(p, c);
        if (!w) { pthread_cond_wait(&p->filled, &p->lock); continue; }
        /* a worker is on batch c: give it twice what a batch takes us, then make c ourselves */
        double wait = 2 * p->make_s > 1e-4 ? 2 * p->make_s : 1e-4;
        double until = now_s() + wait;
        struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
        while (!s->ready && w->k == c && now_s() < until && !p->stop)
            pthread_cond_timedwait(&p->filled, &p->lock, &ts);
        if (s->ready || w->k != c) continue;
        w->stolen = true;
        caller_make(p, c, &made);
        rc = hand_over(p, &made, inputs, targets);
        break;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void fnn_prefetch_free(fnn_prefetch *p) {
    if (!p) return;
    stop_and_join(p);
    prefetch_release(p);
}
