/* backend.cu: the CUDA backend table: device count, a caching allocator,
 * pinned host buffers, copies between host and devices (synchronous, and the
 * loader's asynchronous host->device copy on a copy stream), fill;
 * registered by fnn_cuda_register() (core/device.c calls it once, on the
 * first device query).
 *
 * Streams: the files of cuda/ are built with --default-stream per-thread, so every
 * host thread launches onto its own stream (two threads' ops overlap on the
 * GPU; one thread's ops run in order). A thread that hands a GPU tensor to
 * another thread must fnn_device_synchronize first: the streams of two
 * threads are not ordered against each other.
 *
 * The allocator keeps freed blocks in free lists keyed by (owner, rounded
 * size), so a training loop that frees and re-allocates the same activations
 * never calls cudaMalloc (which synchronises the device) after its first step.
 * The owner is the host thread that allocated the block: a block goes back to
 * its owner's list and only the owner reuses it, so stream order alone makes
 * reuse safe (every kernel that used it was queued on that stream before the
 * next kernel that reuses it). Two cases record an event instead, and the
 * reusing stream waits on it on the GPU (cudaStreamWaitEvent, no host wait):
 * a block freed by another thread than its owner, and the copy pool's blocks
 * (the loader's device batches, owner COPY_OWNER), which the copy stream
 * writes while the compute stream may still read the previous ones. When a
 * thread exits (ThreadExit below) its streams are waited for and its cached
 * blocks go back to the driver; its live blocks, freed later by another
 * thread, join that thread's lists (nothing of the dead owner is queued any
 * more), so a prefetch worker per pass strands nothing.
 *
 * Pinned host buffers (cudaHostAlloc) are cached the same way (HostCache
 * below); a freed buffer that an async copy may still read waits, with that
 * copy's event, until cudaEventQuery says it is done (a poll, never a wait).
 *
 * defines: fnn_cuda_register, fnn_cuda_memory_stats, fnn_cuda_empty_cache */
#include "common.cuh"
#include "ops/norm.h"        /* the families on kernel rows: their row types (fnn_cuda_row_tables) */
#include "ops/pool.h"
#include "ops/reduction.h"
#include "ops/sort.h"
#include "ops/index.h"
#include "ops/loss.h"
#include "ops/attention.h"
#include "ops/rnn.h"
#include "ops/conv.h"
#include "ops/shape.h"
#include "ops/embedding.h"
#include "ops/linalg.h"
#include "optim.h"
#include "ops/int64.h"
#include "ops/elementwise.h"

#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

/* Buckets: multiples of 512 B up to 1 MiB, then 8 steps per power of two, so
 * a block is at most 12.5% bigger than asked and nearby sizes share a list. */
static size_t block_size(size_t bytes) {
    if (bytes <= ((size_t)1 << 20)) return bytes <= 512 ? 512 : (bytes + 511) / 512 * 512;
    size_t pow2 = (size_t)1 << 20;
    while (pow2 * 2 < bytes) pow2 *= 2;     /* pow2 < bytes <= 2 * pow2 */
    size_t step = pow2 / 8;
    return (bytes + step - 1) / step * step;
}

/* The pinned buffer cache's bookkeeping, plain host code above the host-side line so the emulation
 * (spec/gpu/emulated_xfer.cpp) runs the same logic. A token is what says an async copy that reads
 * the block has finished (a cudaEvent_t here); done(token) polls it. Not locked: callers lock. */
struct HostCache {
    struct Block { size_t size; void *token; };
    std::unordered_map<void *, Block> live;                        /* handed out */
    std::unordered_map<size_t, std::vector<void *>> free_lists;    /* size -> ready to reuse */
    std::vector<std::pair<void *, Block>> pending;                 /* freed, a copy may still read it */
    int64_t live_bytes = 0, cached_bytes = 0, allocs = 0, reuses = 0;

    /* pending blocks whose copy finished join the free lists; their tokens go to recycle */
    template <class Done, class Recycle> void poll(Done done, Recycle recycle) {
        for (size_t i = 0; i < pending.size();) {
            if (!pending[i].second.token || done(pending[i].second.token)) {
                if (pending[i].second.token) recycle(pending[i].second.token);
                free_lists[pending[i].second.size].push_back(pending[i].first);
                pending[i] = pending.back();
                pending.pop_back();
            } else {
                i++;
            }
        }
    }
    /* a cached block of this (rounded) size, or NULL */
    void *take(size_t size) {
        auto it = free_lists.find(size);
        if (it == free_lists.end() || it->second.empty()) return NULL;
        void *p = it->second.back();
        it->second.pop_back();
        cached_bytes -= (int64_t)size;
        live_bytes += (int64_t)size;
        live[p] = {size, NULL};
        reuses++;
        return p;
    }
    /* a new block from the driver */
    void add(void *p, size_t size) {
        live[p] = {size, NULL};
        live_bytes += (int64_t)size;
        allocs++;
    }
    /* a copy now reads p (a live block's start): its token replaces (returns) the old one; false if not ours */
    bool set_token(void *p, void *token, void **old) {
        auto it = live.find(p);
        if (it == live.end()) return false;
        *old = it->second.token;
        it->second.token = token;
        return true;
    }
    /* p back into the cache (pending while its copy may run); false if not ours */
    bool give_back(void *p) {
        auto it = live.find(p);
        if (it == live.end()) return false;
        Block b = it->second;
        live.erase(it);
        live_bytes -= (int64_t)b.size;
        cached_bytes += (int64_t)b.size;
        if (b.token) pending.push_back({p, b});
        else free_lists[b.size].push_back(p);
        return true;
    }
    /* every ready block to release(p) (pending ones stay until their copy is done) */
    template <class Release> void release_ready(Release release) {
        for (auto &bucket : free_lists)
            for (void *p : bucket.second) {
                release(p);
                cached_bytes -= (int64_t)bucket.first;
            }
        free_lists.clear();
    }
};

/* ---- fill: y[n] = value ---- */
static __global__ void fill_kernel(float *y, int64_t n, float value) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = value;
}

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */
static int cuda_fill(int ordinal, float *y, int64_t n, float value) {
    if (n <= 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("fill", ordinal));
    FNN_LAUNCH(fill_kernel, fnn_cuda_blocks(n), FNN_CUDA_THREADS, y, n, value);
    FNN_CUDA_CHECK("fill", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* the CUDA backend's row tables, one per family on rows (internal.h's fnn_row_table); the emulation's
 * table points here too */
#define CUDA_ROWS_(family) FNN_ROW_TABLE(#family, fnn_cuda_##family##_rows),
#define CUDA_KERNELS_(family) FNN_KERNEL_TABLE(#family, fnn_cuda_##family##_rows),
extern "C" const fnn_row_table fnn_cuda_row_tables[] = {
    FNN_ROW_FAMILIES(CUDA_ROWS_) FNN_KERNEL_FAMILIES(CUDA_KERNELS_) {NULL, NULL, 0, false},
};

/* ==== host side: the allocator, pinned buffers, streams and copies (the CUDA runtime itself). spec/gpu/emulate.sh
 * compiles everything above this line for the host; emulated_xfer.cpp stands in for the rest ==== */

/* ---- device count: asked once; no driver or no GPU reads as 0, never an error ---- */
static int cuda_device_count(void) {
    static std::once_flag once;
    static int count;
    std::call_once(once, [] {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
        (void)cudaGetLastError();   /* do not leave "no device" behind for a later call */
        count = n;
    });
    return count;
}

/* ---- caching allocator ---- */
enum { MAX_GPUS = 256 };   /* ordinals are 8 bits in an fnn device id */
enum : unsigned { COPY_OWNER = 1 };   /* the copy pool; host threads are 2, 3, ... */

struct Cached { void *blk; cudaEvent_t ev; };   /* ev: recorded at the free, or NULL (owner's stream order) */
struct Live { size_t size; unsigned owner; };
struct Pool {
    std::unordered_map<uint64_t, std::vector<Cached>> free_lists;   /* owner << 42 | block size -> blocks */
    std::unordered_map<void *, Live> live;                          /* block -> its size and owner */
    std::vector<cudaEvent_t> spare_events;                          /* this device's, for reuse */
    cudaStream_t copy_stream = NULL;                                /* made on first use */
};
static std::mutex pool_lock;
/* never destroyed: a tensor collected during process exit may still free into it */
static Pool *const pools = new Pool[MAX_GPUS];
static int64_t live_bytes, cached_bytes;   /* all devices, in block sizes; under pool_lock */
static HostCache *const pinned = new HostCache;   /* under pool_lock */

static thread_local unsigned thread_owner_id;
static thread_local int copy_pool_on;   /* the loader is allocating a batch's device copy */
static unsigned thread_owner(void) {
    static std::atomic<unsigned> next{COPY_OWNER + 1};
    if (!thread_owner_id) thread_owner_id = next++;
    return thread_owner_id;
}
static uint64_t list_key(unsigned owner, size_t size) { return (uint64_t)owner << 42 | (uint64_t)size; }
static const uint64_t SIZE_MASK = ((uint64_t)1 << 42) - 1;
/* threads that exited; under pool_lock; never destroyed (as pools) */
static std::unordered_set<unsigned> *const dead_owners = new std::unordered_set<unsigned>;


/* an event of this (current) device, from the spares; NULL if none can be made. Under pool_lock. */
static cudaEvent_t event_get(Pool &p) {
    if (!p.spare_events.empty()) {
        cudaEvent_t e = p.spare_events.back();
        p.spare_events.pop_back();
        return e;
    }
    cudaEvent_t e = NULL;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) { (void)cudaGetLastError(); return NULL; }
    return e;
}
static void event_put(Pool &p, cudaEvent_t e) {
    try { p.spare_events.push_back(e); } catch (...) { cudaEventDestroy(e); }
}

/* A host thread's exit: wait for its streams, give its cached blocks back to the driver, and mark it
 * dead so that its live blocks, when another thread frees them, go to that thread's lists. */
struct ThreadExit {
    uint64_t used[MAX_GPUS / 64] = {};   /* the ordinals this thread allocated on */
    bool uses(int d) const { return used[d / 64] >> (d % 64) & 1; }
    void mark(int d) { used[d / 64] |= (uint64_t)1 << (d % 64); }
    ~ThreadExit() {
        if (!thread_owner_id) return;
        for (int d = 0; d < MAX_GPUS; d++)
            if (uses(d) && cudaSetDevice(d) == cudaSuccess) cudaStreamSynchronize(cudaStreamPerThread);
        (void)cudaGetLastError();
        std::lock_guard<std::mutex> guard(pool_lock);
        try { dead_owners->insert(thread_owner_id); } catch (...) {}   /* no room: its blocks wait for an OOM */
        for (int d = 0; d < MAX_GPUS; d++) {
            if (!uses(d)) continue;
            Pool &p = pools[d];
            cudaSetDevice(d);
            for (auto it = p.free_lists.begin(); it != p.free_lists.end();) {
                if ((unsigned)(it->first >> 42) != thread_owner_id) { ++it; continue; }
                for (Cached &c : it->second) {
                    cudaFree(c.blk);
                    if (c.ev) event_put(p, c.ev);
                    cached_bytes -= (int64_t)(it->first & SIZE_MASK);
                }
                it = p.free_lists.erase(it);
            }
        }
        (void)cudaGetLastError();
    }
};
static thread_local ThreadExit thread_exit;   /* made on a thread's first allocation or cached free */

/* the device's copy stream (current device = ordinal); NULL if it cannot be made. Under pool_lock. */
static cudaStream_t copy_stream_locked(Pool &p) {
    if (!p.copy_stream && cudaStreamCreateWithFlags(&p.copy_stream, cudaStreamNonBlocking) != cudaSuccess) {
        (void)cudaGetLastError();
        p.copy_stream = NULL;
    }
    return p.copy_stream;
}

/* give one device's cached blocks back to the driver (cudaFree waits for the device, so blocks
 * still read by queued kernels are safe to free); caller holds pool_lock */
static void release_cached(int ordinal) {
    Pool &p = pools[ordinal];
    if (p.free_lists.empty()) return;
    cudaSetDevice(ordinal);
    for (auto &bucket : p.free_lists) {
        size_t size = bucket.first & SIZE_MASK;
        for (Cached &c : bucket.second) {
            cudaFree(c.blk);
            if (c.ev) event_put(p, c.ev);
            cached_bytes -= (int64_t)size;
        }
    }
    p.free_lists.clear();
    (void)cudaGetLastError();
}

static void *cuda_alloc(int ordinal, size_t bytes) {
    if (ordinal < 0 || ordinal >= cuda_device_count()) return NULL;
    size_t size = block_size(bytes);
    unsigned owner = copy_pool_on ? (unsigned)COPY_OWNER : thread_owner();
    std::lock_guard<std::mutex> guard(pool_lock);
    Pool &p = pools[ordinal];
    auto it = p.free_lists.find(list_key(owner, size));
    void *blk = NULL;
    if (it != p.free_lists.end() && !it->second.empty()) {
        Cached c = it->second.back();
        it->second.pop_back();
        cached_bytes -= (int64_t)size;
        blk = c.blk;
        if (c.ev) {
            /* the stream that writes it next waits, on the GPU, for the work queued before its free */
            cudaSetDevice(ordinal);
            cudaStream_t s = owner == COPY_OWNER ? copy_stream_locked(p) : cudaStreamPerThread;
            if (!s || cudaStreamWaitEvent(s, c.ev, 0) != cudaSuccess) cudaEventSynchronize(c.ev);   /* rare: a host wait */
            (void)cudaGetLastError();
            event_put(p, c.ev);
        }
    } else {
        if (cudaSetDevice(ordinal) != cudaSuccess) { (void)cudaGetLastError(); return NULL; }
        if (cudaMalloc(&blk, size) != cudaSuccess) {
            /* out of memory (or fragmented by our own cache): hand the cache back, try once more */
            (void)cudaGetLastError();
            release_cached(ordinal);
            cudaSetDevice(ordinal);
            if (cudaMalloc(&blk, size) != cudaSuccess) {
                (void)cudaGetLastError();
                return NULL;   /* fnn_alloc reports the OOM with the sizes */
            }
        }
    }
    if (owner != COPY_OWNER) thread_exit.mark(ordinal);
    try {
        p.live[blk] = {size, owner};
    } catch (...) {   /* host out of memory for the bookkeeping: no exception may reach C */
        cudaFree(blk);
        return NULL;
    }
    live_bytes += (int64_t)size;
    return blk;
}

static void cuda_free(int ordinal, void *ptr, size_t bytes) {
    (void)bytes;   /* the pool knows the block's real (rounded) size */
    if (!ptr || ordinal < 0 || ordinal >= MAX_GPUS) return;
    std::lock_guard<std::mutex> guard(pool_lock);
    Pool &p = pools[ordinal];
    auto it = p.live.find(ptr);
    if (it == p.live.end()) return;   /* not ours: never hand a foreign pointer to the cache */
    Live b = it->second;
    p.live.erase(it);
    live_bytes -= (int64_t)b.size;
    cudaEvent_t ev = NULL;
    if (b.owner != COPY_OWNER && b.owner != thread_owner() && dead_owners->count(b.owner)) {
        b.owner = thread_owner();   /* its owner exited after waiting for its stream: ours now, in our order */
        thread_exit.mark(ordinal);
    } else if (b.owner == COPY_OWNER || b.owner != thread_owner()) {
        /* the freeing thread's stream is not the one that reuses it: mark where its work ends */
        cudaSetDevice(ordinal);
        ev = event_get(p);
        if (ev && cudaEventRecord(ev, cudaStreamPerThread) != cudaSuccess) {
            event_put(p, ev);
            ev = NULL;
        }
        if (!ev) {   /* no event: give it straight back (cudaFree waits for the device) */
            cudaFree(ptr);
            (void)cudaGetLastError();
            return;
        }
    }
    try {
        p.free_lists[list_key(b.owner, b.size)].push_back({ptr, ev});
        cached_bytes += (int64_t)b.size;
    } catch (...) {   /* no room to remember it: give it straight back */
        cudaSetDevice(ordinal);
        cudaFree(ptr);
        if (ev) event_put(p, ev);
        (void)cudaGetLastError();
    }
}

int fnn_cuda_memory_stats(int64_t *live, int64_t *cached) {
    std::lock_guard<std::mutex> guard(pool_lock);
    if (live) *live = live_bytes;
    if (cached) *cached = cached_bytes;
    return FNN_STATUS_OK;
}

/* ---- pinned host buffers: cudaHostAlloc'd, cached by size (HostCache) ---- */
static bool event_done(void *token) {
    cudaError_t e = cudaEventQuery((cudaEvent_t)token);
    if (e == cudaErrorNotReady) { (void)cudaGetLastError(); return false; }
    (void)cudaGetLastError();   /* done, or a broken context: either way nothing will read it again */
    return true;
}
/* events carry no device here: a finished pinned copy's event is simply destroyed */
static void event_drop(void *token) { cudaEventDestroy((cudaEvent_t)token); }

static void release_pinned(void) {   /* under pool_lock */
    pinned->poll(event_done, event_drop);
    pinned->release_ready([](void *p) { cudaFreeHost(p); });
    (void)cudaGetLastError();
}

static void *cuda_host_alloc(size_t bytes) {
    if (cuda_device_count() == 0) return NULL;
    size_t size = block_size(bytes);
    std::lock_guard<std::mutex> guard(pool_lock);
    try {
        pinned->poll(event_done, event_drop);
        if (void *p = pinned->take(size)) return p;
        void *p = NULL;
        if (cudaHostAlloc(&p, size, cudaHostAllocPortable) != cudaSuccess) {
            (void)cudaGetLastError();
            release_pinned();   /* as the device allocator: hand the cache back, try once more */
            if (cudaHostAlloc(&p, size, cudaHostAllocPortable) != cudaSuccess) {
                (void)cudaGetLastError();
                return NULL;
            }
        }
        pinned->add(p, size);
        return p;
    } catch (...) {   /* host out of memory for the bookkeeping */
        return NULL;
    }
}

static void cuda_host_free(void *p, size_t bytes) {
    (void)bytes;
    if (!p) return;
    std::lock_guard<std::mutex> guard(pool_lock);
    try {
        pinned->give_back(p);
    } catch (...) {   /* cannot remember it: it is lost to the cache, not freed under a running copy */
    }
}

static int cuda_host_stats(int64_t *s) {
    std::lock_guard<std::mutex> guard(pool_lock);
    s[0] = pinned->live_bytes, s[1] = pinned->cached_bytes, s[2] = pinned->allocs, s[3] = pinned->reuses;
    return FNN_STATUS_OK;
}

void fnn_cuda_empty_cache(void) {
    std::lock_guard<std::mutex> guard(pool_lock);
    for (int d = 0; d < MAX_GPUS; d++) release_cached(d);
    release_pinned();
}

/* ---- streams: the loader's copies, waiting ---- */
static void cuda_copy_pool(int on) { copy_pool_on = on; }

/* dst (device) = src (host, ideally a pinned buffer) on the copy stream; the calling thread's stream
 * waits for it on the GPU; a pinned src stays pending in the cache until the copy is done */
static int cuda_copy_async(int ordinal, void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("to", ordinal));
    cudaStream_t s;
    cudaEvent_t ev = NULL;
    {
        std::lock_guard<std::mutex> guard(pool_lock);
        s = copy_stream_locked(pools[ordinal]);
    }
    FNN_CHECK(s != NULL, FNN_STATUS_DEVICE, "to: cannot create the copy stream of cuda:%d", ordinal);
    FNN_CUDA_CHECK("to", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e != cudaSuccess) {   /* the copy is queued but nothing will mark its end: wait for it here, so that
                               * the caller may reuse src (host_free) and dst is written before any kernel */
        cudaStreamSynchronize(s);
        return fnn_cuda_status("to", "cudaEventCreateWithFlags", e, __FILE__, __LINE__);
    }
    e = cudaEventRecord(ev, s);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(cudaStreamPerThread, ev, 0);
    if (e != cudaSuccess) {
        cudaStreamSynchronize(s);   /* no ordering on the GPU: order it on the host */
        cudaEventDestroy(ev);
        return fnn_cuda_status("to", "cudaEventRecord/cudaStreamWaitEvent", e, __FILE__, __LINE__);
    }
    std::lock_guard<std::mutex> guard(pool_lock);
    void *old = NULL;
    if (pinned->set_token(const_cast<void *>(src), ev, &old)) {
        if (old) cudaEventDestroy((cudaEvent_t)old);   /* the newer copy's event covers the buffer */
    } else {
        cudaEventDestroy(ev);   /* pageable src: cudaMemcpyAsync returned once it was read */
    }
    return FNN_STATUS_OK;
}

static int cuda_synchronize(int ordinal, int thread_only) {
    FNN_TRY(fnn_cuda_use_device("synchronize", ordinal));
    if (thread_only) FNN_CUDA_CHECK("synchronize", cudaStreamSynchronize(cudaStreamPerThread));
    else FNN_CUDA_CHECK("synchronize", cudaDeviceSynchronize());
    return FNN_STATUS_OK;
}

/* ---- copies: bytes between host and device or between devices ---- */
static int cuda_copy(void *dst, int dst_device, const void *src, int src_device, size_t bytes) {
    if (bytes == 0) return FNN_STATUS_OK;
    bool dst_gpu = fnn_device_type_of(dst_device) == FNN_DEVICE_CUDA;
    bool src_gpu = fnn_device_type_of(src_device) == FNN_DEVICE_CUDA;
    int dord = fnn_device_ordinal(dst_device), sord = fnn_device_ordinal(src_device);
    if (dst_gpu && src_gpu && dord != sord) {
        FNN_CUDA_CHECK("to", cudaMemcpyPeer(dst, dord, src, sord, bytes));
        return FNN_STATUS_OK;
    }
    /* the device ordinal that owns the GPU side decides the context */
    FNN_TRY(fnn_cuda_use_device("to", dst_gpu ? dord : sord));
    cudaMemcpyKind kind = dst_gpu && src_gpu ? cudaMemcpyDeviceToDevice
                        : dst_gpu            ? cudaMemcpyHostToDevice
                        : src_gpu            ? cudaMemcpyDeviceToHost
                                             : cudaMemcpyHostToHost;
    FNN_CUDA_CHECK("to", cudaMemcpy(dst, src, bytes, kind));
    return FNN_STATUS_OK;
}

/* ---- the table ---- */
static const fnn_backend cuda_backend = {
    /* name */ "cuda",
    /* device_count */ cuda_device_count,
    /* alloc */ cuda_alloc,
    /* free */ cuda_free,
    /* copy */ cuda_copy,
    /* fill */ cuda_fill,
    /* strided_copy */ fnn_cuda_strided_copy,
    /* random */ fnn_cuda_random,
    /* ---- pinned host buffers and streams (cuda/backend.cu) ---- */
    /* synchronize */ cuda_synchronize,
    /* host_alloc */ cuda_host_alloc,
    /* host_free */ cuda_host_free,
    /* host_stats */ cuda_host_stats,
    /* copy_async */ cuda_copy_async,
    /* copy_pool */ cuda_copy_pool,
    /* rows */ fnn_cuda_row_tables,
    /* (end of xfer) */
};

void fnn_cuda_register(void) { fnn_register_backend(FNN_DEVICE_CUDA, &cuda_backend); }
