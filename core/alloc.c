/* alloc.c: every buffer comes from here. Live bytes are counted per device
 * type (Lua reads the counter through a pointer to decide when to collect);
 * large CPU buffers are cached by size so a training loop that frees and
 * re-allocates the same activations does not page-fault each step.
 * Also the backend table and refcounted storages. */
#include "internal.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static volatile int64_t live_bytes[2];
static volatile int64_t peak_bytes[2];

const volatile int64_t *fnn_live_bytes_ptr(int device_type) {
    return &live_bytes[device_type == FNN_DEVICE_CUDA ? 1 : 0];
}
/* atomic loads: count() updates both from any thread (Lua reads live_bytes through the pointer,
 * a plain aligned 8-byte load; tools/sanitizers/tsan.supp says why that is left as it is) */
int64_t fnn_live_bytes(int device_type) { return __atomic_load_n(fnn_live_bytes_ptr(device_type), __ATOMIC_RELAXED); }
int64_t fnn_peak_bytes(int device_type) {
    return __atomic_load_n(&peak_bytes[device_type == FNN_DEVICE_CUDA ? 1 : 0], __ATOMIC_RELAXED);
}

static void count(int type, int64_t delta) {
    int i = type == FNN_DEVICE_CUDA ? 1 : 0;
    int64_t now = __atomic_add_fetch(&live_bytes[i], delta, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&peak_bytes[i], __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&peak_bytes[i], &peak, now, true,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

/* Small CPU buffers share one block with their storage header, and freed blocks
 * wait in per-thread free lists by power-of-two size class: LuaJIT finalizes
 * tensors in batches, and glibc's malloc spends more time consolidating those
 * frees than the ops spend computing. */
#define STORAGE_HEADER 64
_Static_assert(sizeof(fnn_storage) <= STORAGE_HEADER, "storage header must fit before its data");
#define SMALL_CLASSES 11               /* capacities 64 B .. 64 KB */
#define SMALL_KEEP_BYTES (4 << 20)     /* kept per class and thread: a GC sweep frees thousands at once */
typedef struct small_block { struct small_block *next; } small_block;
static _Thread_local small_block *small_free[SMALL_CLASSES];
static _Thread_local int small_count[SMALL_CLASSES];
/* A thread's lists go back to the system when it exits (a pthread key's destructor): without
 * it every host thread that used fastnn and ended left up to SMALL_KEEP_BYTES per class behind. */
static pthread_key_t small_key;
static pthread_once_t small_key_once = PTHREAD_ONCE_INIT;
static _Thread_local int small_key_set;
static void small_lists_release(void);
static void small_thread_exit(void *unused) { (void)unused; small_lists_release(); }
static void small_key_init(void) { pthread_key_create(&small_key, small_thread_exit); }
static void small_lists_register(void) {
    pthread_once(&small_key_once, small_key_init);
    pthread_setspecific(small_key, (void *)&small_key_set);   /* any non-NULL value runs the destructor */
    small_key_set = 1;
}

/* ---- CPU buffer cache: exact-size buckets for buffers >= CACHE_MIN ----
 * A training step frees and re-allocates the same activation sizes every step, and a GC sweep
 * returns hundreds of them at once: freed buffers wait in an intrusive list per exact size (the
 * link lives in the buffer itself), up to CACHE_MAX_BYTES in all. Without it glibc unmaps them and
 * the next step page-faults fresh zeroed pages (measured: a third of mlp_fmnist's time with a
 * 64-entry cache). The table holds up to CACHE_BUCKETS distinct sizes, by open addressing. */
#define CACHE_MIN (64 * 1024)
#define CACHE_BUCKETS 512
#define CACHE_MAX_BYTES ((int64_t)1 << 30)
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { size_t bytes; void *head; } cache[CACHE_BUCKETS];
static int64_t cached_bytes;

/* the bucket of this size (lock held): its slot, or the empty slot where it would go, or -1 */
static int cache_slot(size_t bytes) {
    size_t h = (bytes >> 6) * 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < CACHE_BUCKETS; k++) {
        int i = (int)((h + (size_t)k) % CACHE_BUCKETS);
        if (cache[i].bytes == bytes || cache[i].bytes == 0) return i;
    }
    return -1;
}

static void cache_release(void);

static void *cpu_alloc(int ordinal, size_t bytes) {
    (void)ordinal;
    if (bytes >= CACHE_MIN) {
        pthread_mutex_lock(&cache_lock);
        int i = cache_slot(bytes);
        void *p = i >= 0 && cache[i].bytes == bytes ? cache[i].head : NULL;
        if (p) {
            memcpy(&cache[i].head, p, sizeof(void *));   /* pop: the next link is the buffer's first word */
            cached_bytes -= (int64_t)bytes;
        }
        pthread_mutex_unlock(&cache_lock);
        if (p) return p;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) == 0) return p;
    cache_release();   /* the cached buffers of other sizes go back to the system; one retry */
    if (posix_memalign(&p, 64, bytes ? bytes : 64) == 0) return p;
    return NULL;
}

static void cpu_free(int ordinal, void *p, size_t bytes) {
    (void)ordinal;
    if (bytes >= CACHE_MIN) {
        pthread_mutex_lock(&cache_lock);
        int i = cached_bytes + (int64_t)bytes <= CACHE_MAX_BYTES ? cache_slot(bytes) : -1;
        if (i >= 0) {
            cache[i].bytes = bytes;
            memcpy(p, &cache[i].head, sizeof(void *));   /* push */
            cache[i].head = p;
            cached_bytes += (int64_t)bytes;
            pthread_mutex_unlock(&cache_lock);
            return;
        }
        pthread_mutex_unlock(&cache_lock);
    }
    free(p);
}

static void small_lists_release(void) {   /* this thread's lists */
    for (int c = 0; c < SMALL_CLASSES; c++) {
        while (small_free[c]) {
            small_block *b = small_free[c];
            small_free[c] = b->next;
            free(b);
        }
        small_count[c] = 0;
    }
}

void fnn_empty_cache(void) {
    small_lists_release();
    cache_release();
}

static void cache_release(void) {
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < CACHE_BUCKETS; i++) {
        void *p = cache[i].head;
        while (p) {
            void *next;
            memcpy(&next, p, sizeof next);
            free(p);
            p = next;
        }
        cache[i].head = NULL;   /* the size stays: probing must still find the sizes placed after it */
    }
    cached_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
}

static int cpu_copy(void *dst, int dst_device, const void *src, int src_device, size_t bytes) {
    (void)dst_device; (void)src_device;
    memcpy(dst, src, bytes);
    return FNN_STATUS_OK;
}
static int cpu_count(void) { return 1; }

static const fnn_backend cpu_backend = {
    .name = "cpu", .device_count = cpu_count, .alloc = cpu_alloc, .free = cpu_free, .copy = cpu_copy,
    .rows = fnn_cpu_row_tables,
};
static const fnn_backend *backends[2] = {&cpu_backend, NULL};

void fnn_register_backend(int device_type, const fnn_backend *b) {
    if (device_type >= 0 && device_type < 2) backends[device_type] = b;
}
const fnn_backend *fnn_backend_for(int device) {
    int type = fnn_device_type_of(device);
    return type >= 0 && type < 2 ? backends[type] : NULL;
}

/* ---- out-of-memory errors: the op, the bytes asked for, the bytes live ---- */

static _Thread_local const char *current_op;
static _Thread_local int op_pinned;   /* in backward: the ops and creators a rule calls keep its name */
void fnn_set_op(const char *op) {
    if (!op_pinned) current_op = op;
    if (fnn_profile_maybe()) fnn_profile_op_named(op);   /* profile.c: names the open bracket */
}
void fnn_pin_op(const char *op) {
    op_pinned = op != NULL;
    if (op) current_op = op;
}

/* bytes as text: "512 B", "1.2 MB" (binary units) */
static const char *bytes_text(char *buf, size_t len, double b) {
    static const char *const unit[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (b >= 1024 && u < 5) { b /= 1024; u++; }
    if (u == 0) snprintf(buf, len, "%.0f B", b);
    else snprintf(buf, len, "%.1f %s", b, unit[u]);
    return buf;
}

int fnn_alloc_failed(int device, double bytes, const char *why) {
    char name[32], live[32], where[48] = "";
    int type = fnn_device_type_of(device);
    if (type != FNN_DEVICE_CPU) snprintf(where, sizeof where, " on %s", fnn_device_name(device, name, sizeof name));
    return FNN_FAIL(FNN_STATUS_OOM, "%s: cannot allocate %.0f bytes%s (%s live): %s", current_op ? current_op : "alloc",
                    bytes, where, bytes_text(live, sizeof live, (double)fnn_live_bytes(type)), why);
}

const char *fnn_device_name(int device, char *buf, int len) {
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU) snprintf(buf, (size_t)len, "cpu");
    else snprintf(buf, (size_t)len, "cuda:%d", fnn_device_ordinal(device));
    return buf;
}

void *fnn_alloc(int device, int64_t bytes) {
    const fnn_backend *b = fnn_backend_for(device);
    char name[32];
    if (!b) {
        FNN_FAIL(FNN_STATUS_DEVICE, "alloc: device %s is not available in this build",
                 fnn_device_name(device, name, sizeof name));
        return NULL;
    }
    /* refuse absurd sizes before asking the OS: 2^40 bytes is far past any machine here */
    if (bytes < 0 || bytes > ((int64_t)1 << 40)) {
        fnn_alloc_failed(device, (double)bytes, "too large to allocate");
        return NULL;
    }
    void *p = b->alloc(fnn_device_ordinal(device), (size_t)bytes);
    if (!p) {
        fnn_alloc_failed(device, (double)bytes, "out of memory");
        return NULL;
    }
    count(fnn_device_type_of(device), bytes);
    return p;
}

void fnn_free(int device, void *p, int64_t bytes) {
    if (!p) return;
    const fnn_backend *b = fnn_backend_for(device);
    if (b) b->free(fnn_device_ordinal(device), p, (size_t)bytes);
    count(fnn_device_type_of(device), -bytes);
}

static int size_class_of(int64_t bytes) {
    int c = 0;
    while (c < SMALL_CLASSES && ((int64_t)64 << c) < bytes) c++;
    return c;   /* SMALL_CLASSES: too big for the lists */
}

fnn_storage *fnn_storage_new(int device, int64_t bytes) {
    int c = bytes >= 0 ? size_class_of(bytes) : SMALL_CLASSES;
    if (fnn_device_type_of(device) == FNN_DEVICE_CPU && c < SMALL_CLASSES) {
        void *block = small_free[c];
        if (block) {
            small_free[c] = small_free[c]->next;
            small_count[c]--;
        } else if (posix_memalign(&block, 64, STORAGE_HEADER + ((size_t)64 << c)) != 0) {
            fnn_alloc_failed(device, (double)bytes, "out of memory");
            return NULL;
        }
        fnn_storage *s = block;
        atomic_init(&s->refcount, 1);
        s->device = device;
        s->size_class = c;
        s->bytes = bytes;
        s->data = (float *)((char *)block + STORAGE_HEADER);
        count(FNN_DEVICE_CPU, bytes);
        return s;
    }
    fnn_storage *s = malloc(sizeof *s);
    if (!s) { fnn_alloc_failed(device, (double)bytes, "out of memory"); return NULL; }
    s->data = fnn_alloc(device, bytes);
    if (!s->data) { free(s); return NULL; }
    atomic_init(&s->refcount, 1);
    s->device = device;
    s->size_class = -1;
    s->bytes = bytes;
    return s;
}

void fnn_storage_retain(fnn_storage *s) { atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed); }

void fnn_storage_release(fnn_storage *s) {
    if (!s) return;
    if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) == 1) {
        int c = s->size_class;
        if (c >= 0) {
            count(FNN_DEVICE_CPU, -s->bytes);
            if (((int64_t)small_count[c] << (6 + c)) < SMALL_KEEP_BYTES) {
                if (!small_key_set) small_lists_register();
                small_block *b = (small_block *)s;
                b->next = small_free[c];
                small_free[c] = b;
                small_count[c]++;
                return;
            }
        } else {
            fnn_free(s->device, s->data, s->bytes);
        }
        free(s);
    }
}
