/* backend.cu: the CUDA backend table: device count, a caching allocator,
 * copies between host and devices, fill; registered by fnn_cuda_register()
 * (core/device.c calls it once, on the first device query).
 *
 * The allocator keeps freed blocks in per-device free lists keyed by rounded
 * size, so a training loop that frees and re-allocates the same activations
 * never calls cudaMalloc (which synchronises the device) after its first step.
 * All work runs on the legacy default stream, so a block freed by one op and
 * reused by the next is ordered after every kernel that used it.
 *
 * defines: fnn_cuda_register, fnn_cuda_memory_stats, fnn_cuda_empty_cache */
#include "common.cuh"

#include <mutex>
#include <unordered_map>
#include <vector>

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

struct Pool {
    std::unordered_map<size_t, std::vector<void *>> free_lists;  /* block size -> cached blocks */
    std::unordered_map<void *, size_t> live;                      /* block -> its size */
};
static std::mutex pool_lock;
/* never destroyed: a tensor collected during process exit may still free into it */
static Pool *const pools = new Pool[MAX_GPUS];
static int64_t live_bytes, cached_bytes;   /* all devices, in block sizes; under pool_lock */

/* Buckets: multiples of 512 B up to 1 MiB, then 8 steps per power of two, so
 * a block is at most 12.5% bigger than asked and nearby sizes share a list. */
static size_t block_size(size_t bytes) {
    if (bytes <= ((size_t)1 << 20)) return bytes <= 512 ? 512 : (bytes + 511) / 512 * 512;
    size_t pow2 = (size_t)1 << 20;
    while (pow2 * 2 < bytes) pow2 *= 2;     /* pow2 < bytes <= 2 * pow2 */
    size_t step = pow2 / 8;
    return (bytes + step - 1) / step * step;
}

/* give one device's cached blocks back to the driver; caller holds pool_lock */
static void release_cached(int ordinal) {
    Pool &p = pools[ordinal];
    if (p.free_lists.empty()) return;
    cudaSetDevice(ordinal);
    for (auto &bucket : p.free_lists) {
        for (void *blk : bucket.second) {
            cudaFree(blk);
            cached_bytes -= (int64_t)bucket.first;
        }
    }
    p.free_lists.clear();
    (void)cudaGetLastError();
}

static void *cuda_alloc(int ordinal, size_t bytes) {
    if (ordinal < 0 || ordinal >= cuda_device_count()) return NULL;
    size_t size = block_size(bytes);
    std::lock_guard<std::mutex> guard(pool_lock);
    Pool &p = pools[ordinal];
    auto it = p.free_lists.find(size);
    void *blk = NULL;
    if (it != p.free_lists.end() && !it->second.empty()) {
        blk = it->second.back();
        it->second.pop_back();
        cached_bytes -= (int64_t)size;
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
    try {
        p.live[blk] = size;
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
    size_t size = it->second;
    p.live.erase(it);
    live_bytes -= (int64_t)size;
    try {
        p.free_lists[size].push_back(ptr);
        cached_bytes += (int64_t)size;
    } catch (...) {   /* no room to remember it: give it straight back */
        cudaSetDevice(ordinal);
        cudaFree(ptr);
        (void)cudaGetLastError();
    }
}

int fnn_cuda_memory_stats(int64_t *live, int64_t *cached) {
    std::lock_guard<std::mutex> guard(pool_lock);
    if (live) *live = live_bytes;
    if (cached) *cached = cached_bytes;
    return FNN_STATUS_OK;
}

void fnn_cuda_empty_cache(void) {
    std::lock_guard<std::mutex> guard(pool_lock);
    for (int d = 0; d < MAX_GPUS; d++) release_cached(d);
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

/* ---- fill: y[n] = value ---- */
__global__ void fill_kernel(float *y, int64_t n, float value) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = value;
}

static int cuda_fill(int ordinal, float *y, int64_t n, float value) {
    if (n <= 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("fill", ordinal));
    fill_kernel<<<fnn_cuda_blocks(n), FNN_CUDA_THREADS>>>(y, n, value);
    FNN_CUDA_CHECK("fill", cudaGetLastError());
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
    /* binary */ fnn_cuda_binary,
    /* gemm */ fnn_cuda_gemm,
    /* strided_copy */ fnn_cuda_strided_copy,
    /* map */ fnn_cuda_map,
    /* reduce */ fnn_cuda_reduce,
    /* reduce_grad */ fnn_cuda_reduce_grad,
    /* optim */ fnn_cuda_optim,
    /* random */ fnn_cuda_random,
    /* class_loss */ fnn_cuda_class_loss,
    /* class_loss_grad */ fnn_cuda_class_loss_grad,
    /* ew_loss */ fnn_cuda_ew_loss,
    /* ew_loss_grad */ fnn_cuda_ew_loss_grad,
    /* index */ fnn_cuda_index,
    /* norm */ fnn_cuda_norm,
    /* norm_grad */ fnn_cuda_norm_grad,
    /* cast */ fnn_cuda_cast,
    /* int_binary */ fnn_cuda_int_binary,
    /* ---- cuda/conv.cu: conv, conv_transpose, depthwise (im2col/col2im + gemm) ---- */
    /* conv_im2col */ fnn_cuda_conv_im2col,
    /* conv_col2im */ fnn_cuda_conv_col2im,
    /* conv_depthwise */ fnn_cuda_conv_depthwise,
    /* conv_depthwise_input_grad */ fnn_cuda_conv_depthwise_input_grad,
    /* (end of conv) */
    /* ---- cuda/pool.cu: pooling and upsampling; cuda/batch_norm.cu: batch_norm ---- */
    /* max_pool */ fnn_cuda_max_pool,
    /* max_pool_grad */ fnn_cuda_max_pool_grad,
    /* avg_pool */ fnn_cuda_avg_pool,
    /* avg_pool_grad */ fnn_cuda_avg_pool_grad,
    /* adaptive_avg_pool */ fnn_cuda_adaptive_avg_pool,
    /* adaptive_avg_pool_grad */ fnn_cuda_adaptive_avg_pool_grad,
    /* upsample_nearest */ fnn_cuda_upsample_nearest,
    /* upsample_nearest_grad */ fnn_cuda_upsample_nearest_grad,
    /* upsample_bilinear */ fnn_cuda_upsample_bilinear,
    /* upsample_bilinear_grad */ fnn_cuda_upsample_bilinear_grad,
    /* batch_norm */ fnn_cuda_batch_norm,
    /* batch_norm_grad */ fnn_cuda_batch_norm_grad,
    /* (end of pool) */
    /* ---- cuda/shape.cu: cat, stack, repeat, pad, tril/triu; cuda/sort.cu: sort, topk; int64 reductions ---- */
    /* copy_into */ fnn_cuda_copy_into,
    /* pad */ fnn_cuda_pad,
    /* repeat */ fnn_cuda_repeat,
    /* repeat_grad */ fnn_cuda_repeat_grad,
    /* tri */ fnn_cuda_tri,
    /* sort */ fnn_cuda_sort,
    /* sort_grad */ fnn_cuda_sort_grad,
    /* int_reduce */ fnn_cuda_int_reduce,
    /* (end of shape) */
    /* ---- cuda/rnn.cu: the recurrent cells and sequences; cuda/attention.cu: fused attention ---- */
    /* lstm_cell */ fnn_cuda_lstm_cell,
    /* lstm_cell_grad */ fnn_cuda_lstm_cell_grad,
    /* rnn_step */ fnn_cuda_rnn_step,
    /* rnn_step_grad */ fnn_cuda_rnn_step_grad,
    /* seq_copy */ fnn_cuda_seq_copy,
    /* attn_softmax */ fnn_cuda_attn_softmax,
    /* attn_softmax_grad */ fnn_cuda_attn_softmax_grad,
    /* (end of seq) */
    /* ---- pinned host buffers and streams (cuda/backend.cu) ---- */
    /* (end of xfer) */
};

void fnn_cuda_register(void) { fnn_register_backend(FNN_DEVICE_CUDA, &cuda_backend); }
