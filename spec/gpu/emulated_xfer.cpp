// spec/gpu/emulated_xfer.cpp: the transfer entries of cuda/backend.cu for the host emulation, and its
// fill (backend.cu's own launcher, above its host-side line). The transfer entries are host stand-ins,
// not backend.cu's code (which is the CUDA runtime: streams, events, cudaHostAlloc); the pinned cache
// is backend.cu's own HostCache (cut above its host-side line), over malloc instead of cudaHostAlloc.
// An async copy is a memcpy done at once, its token (the event on a GPU) set done when it has run,
// so a freed pinned buffer goes through the cache's pending list and poll as on a GPU. What this
// cannot show: the copy stream's overlap, and the compute stream's wait on the event (the ordering of
// a real async copy); spec/gpu/check.sh runs those on a GPU.
#include "emulated.h"
#include "backend_body.inc"   /* block_size, HostCache, fill (cut from cuda/backend.cu) */
#include <mutex>

namespace {
std::mutex lock;
HostCache cache;

bool done(void *token) { return *(int *)token != 0; }
void drop(void *token) { delete (int *)token; }

int m_synchronize(int, int) { return 0; }
void *m_host_alloc(size_t bytes) {
    size_t size = block_size(bytes);
    std::lock_guard<std::mutex> g(lock);
    cache.poll(done, drop);
    if (void *p = cache.take(size)) return p;
    void *p = malloc(size);
    if (p) cache.add(p, size);
    return p;
}
void m_host_free(void *p, size_t) {
    std::lock_guard<std::mutex> g(lock);
    cache.give_back(p);
}
int m_host_stats(int64_t *s) {
    std::lock_guard<std::mutex> g(lock);
    s[0] = cache.live_bytes, s[1] = cache.cached_bytes, s[2] = cache.allocs, s[3] = cache.reuses;
    return 0;
}
int m_copy_async(int, void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return 0;
    int *token = new int(0);
    memcpy(dst, src, bytes);
    *token = 1;   // the copy has run: its "event" has completed
    std::lock_guard<std::mutex> g(lock);
    void *old = NULL;
    if (cache.set_token(const_cast<void *>(src), token, &old)) {
        if (old) drop(old);
    } else {
        drop(token);   // a pageable source
    }
    return 0;
}
void m_copy_pool(int) {}   // one host thread, no streams: every block is safe to reuse at once
}  // namespace

EMULATED_BACKEND_ADD(xfer) {
    b->fill = cuda_fill;   /* backend.cu's own launcher, above its host-side line */
    b->synchronize = m_synchronize;
    b->host_alloc = m_host_alloc;
    b->host_free = m_host_free;
    b->host_stats = m_host_stats;
    b->copy_async = m_copy_async;
    b->copy_pool = m_copy_pool;
}
