/* conv.cu: the device kernels of core/ops/conv.c's convolutions (conv1d/2d/3d, conv_transpose1d/2d/3d,
 * depthwise): im2col and its adjoint col2im, for the geometry of conv.h (every
 * convolution as one forward convolution from [N, C, D, H, W] to [N, O, Do, Ho, Wo]). The core runs
 * the rest through the table: the gemms (cuBLAS, batched), the bias (broadcast add), db (reduce).
 *
 * im2col: a thread per col element (grid-stride), writes along l (an output position) so a warp
 * writes 32 neighbours and, at stride 1, reads 32 neighbours of x. Its layout is set by two strides
 * (element (n, row, l) at n image_stride + row row_stride + l), so the core gets [images, C taps, L]
 * for the forward's gemms batched over images, or [C taps, images, L] for dw's one gemm over every
 * image. col2im is a gather, a thread per input element summing, in tap order, the col entries that
 * read it (the order of the CPU's scatter): no atomics, so the result is the same every run.
 * Depthwise convolutions (groups = C > 1) skip the col for direct kernels, forward and dx (a thread
 * per output / input element, taps in the CPU's order); their dw is the general col + gemm one (a sum
 * over every image and position, which cuBLAS does well).
 * Indices are 32-bit when every extent involved stays below 2^30 (div/mod are much cheaper), else
 * 64-bit.
 *
 * defines: fnn_cuda_conv_im2col, fnn_cuda_conv_col2im, fnn_cuda_conv_depthwise,
 *          fnn_cuda_conv_depthwise_input_grad */
#include "common.cuh"
#include "ops/conv.h"

/* col[n image_stride + (c taps + t) row_stride + l] = x[n, c] read at tap t = (kz, ki, kj) of output
 * position l = (oz, oy, ox), zero in the padding; x [count, C, D, H, W] contiguous */
template <class I>
__global__ void conv_im2col_kernel(float *__restrict__ col, const float *__restrict__ x, conv_geom g, I count,
                                   I row_stride, I image_stride) {
    const I L = (I)g.L, taps = (I)g.taps, rows = (I)g.C * taps, total = count * rows * L;
    const I Wo = (I)g.Wo, Ho = (I)g.Ho, kw = (I)g.kw, kh = (I)g.kh, D = (I)g.D, H = (I)g.H, W = (I)g.W;
    for (I e = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; e < total; e += (I)gridDim.x * (I)blockDim.x) {
        const I l = e % L, r = (e / L) % rows, n = e / (L * rows);
        const I ox = l % Wo, oy = (l / Wo) % Ho, oz = l / (Wo * Ho);
        const I t = r % taps, c = r / taps;
        const I kj = t % kw, ki = (t / kw) % kh, kz = t / (kw * kh);
        const I iz = oz * (I)g.sd - (I)g.pd + kz * (I)g.dd;
        const I iy = oy * (I)g.sh - (I)g.ph + ki * (I)g.dh;
        const I ix = ox * (I)g.sw - (I)g.pw + kj * (I)g.dw;
        float v = 0.0f;
        if (iz >= 0 && iz < D && iy >= 0 && iy < H && ix >= 0 && ix < W)
            v = x[(((n * (I)g.C + c) * D + iz) * H + iy) * W + ix];
        col[n * image_stride + r * row_stride + l] = v;
    }
}

/* dx [count, C, D, H, W] = for each element, the sum over the taps that read it of col [count, C taps, L]
 * (contiguous), in tap order from 0, then + bias_in[c] (NULL: none), as the CPU's col2im adds */
template <class I>
__global__ void conv_col2im_kernel(float *__restrict__ dx, const float *__restrict__ col,
                                   const float *__restrict__ bias_in, conv_geom g, I count) {
    const I C = (I)g.C, D = (I)g.D, H = (I)g.H, W = (I)g.W, S = (I)g.S, L = (I)g.L, taps = (I)g.taps;
    const I Do = (I)g.Do, Ho = (I)g.Ho, Wo = (I)g.Wo, sd = (I)g.sd, sh = (I)g.sh, sw = (I)g.sw;
    const I total = count * C * S;
    for (I e = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; e < total; e += (I)gridDim.x * (I)blockDim.x) {
        const I ix = e % W, iy = (e / W) % H, iz = (e / (W * H)) % D, nc = e / S;
        const float *cn = col + nc * taps * L;   /* the rows of image n, channel c */
        float s = 0.0f;
        for (I kz = 0; kz < (I)g.kd; kz++) {
            const I zz = iz + (I)g.pd - kz * (I)g.dd;   /* oz sd for this tap; falls as kz grows */
            if (zz < 0) break;
            if (zz % sd != 0 || zz / sd >= Do) continue;
            for (I ki = 0; ki < (I)g.kh; ki++) {
                const I yy = iy + (I)g.ph - ki * (I)g.dh;
                if (yy < 0) break;
                if (yy % sh != 0 || yy / sh >= Ho) continue;
                for (I kj = 0; kj < (I)g.kw; kj++) {
                    const I xx = ix + (I)g.pw - kj * (I)g.dw;
                    if (xx < 0) break;
                    if (xx % sw != 0 || xx / sw >= Wo) continue;
                    const I t = (kz * (I)g.kh + ki) * (I)g.kw + kj;
                    s += cn[t * L + ((zz / sd) * Ho + yy / sh) * Wo + xx / sw];
                }
            }
        }
        dx[e] = bias_in ? s + bias_in[nc % C] : s;
    }
}

/* depthwise (groups = C > 1, m = O / C outputs per channel), no col: a thread per output element,
 * y [count, O, L] = b[o] (b NULL: 0) then + w[o, t] x[n, o / m] at tap t, taps in order (the CPU's order) */
template <class I>
__global__ void conv_depthwise_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ w,
                                      const float *__restrict__ b, conv_geom g, I count) {
    const I O = (I)g.O, L = (I)g.L, S = (I)g.S, m = (I)g.Og, taps = (I)g.taps, total = count * O * L;
    const I D = (I)g.D, H = (I)g.H, W = (I)g.W, Wo = (I)g.Wo, Ho = (I)g.Ho;
    for (I e = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; e < total; e += (I)gridDim.x * (I)blockDim.x) {
        const I l = e % L, no = e / L, o = no % O, n = no / O;
        const I ox = l % Wo, oy = (l / Wo) % Ho, oz = l / (Wo * Ho);
        const float *xc = x + (n * (I)g.C + o / m) * S, *wo = w + o * taps;
        float s = b ? b[o] : 0.0f;
        for (I kz = 0; kz < (I)g.kd; kz++) {
            const I iz = oz * (I)g.sd - (I)g.pd + kz * (I)g.dd;
            if (iz < 0 || iz >= D) continue;
            for (I ki = 0; ki < (I)g.kh; ki++) {
                const I iy = oy * (I)g.sh - (I)g.ph + ki * (I)g.dh;
                if (iy < 0 || iy >= H) continue;
                for (I kj = 0; kj < (I)g.kw; kj++) {
                    const I ix = ox * (I)g.sw - (I)g.pw + kj * (I)g.dw;
                    if (ix < 0 || ix >= W) continue;
                    s += wo[(kz * (I)g.kh + ki) * (I)g.kw + kj] * xc[(iz * H + iy) * W + ix];
                }
            }
        }
        y[e] = s;
    }
}

/* its input gradient as a gather, a thread per input element: dx [count, C, S] = bias_in[c] (NULL: 0)
 * then, per output o = c m + j in order and tap t in order, + w[o, t] dy[n, o] at the position that read it */
template <class I>
__global__ void conv_depthwise_input_grad_kernel(float *__restrict__ dx, const float *__restrict__ dy,
                                                 const float *__restrict__ w, const float *__restrict__ bias_in,
                                                 conv_geom g, I count) {
    const I C = (I)g.C, D = (I)g.D, H = (I)g.H, W = (I)g.W, S = (I)g.S, L = (I)g.L, taps = (I)g.taps, m = (I)g.Og;
    const I Do = (I)g.Do, Ho = (I)g.Ho, Wo = (I)g.Wo, sd = (I)g.sd, sh = (I)g.sh, sw = (I)g.sw;
    const I total = count * C * S;
    for (I e = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; e < total; e += (I)gridDim.x * (I)blockDim.x) {
        const I ix = e % W, iy = (e / W) % H, iz = (e / (W * H)) % D, nc = e / S, c = nc % C, n = nc / C;
        float s = bias_in ? bias_in[c] : 0.0f;
        for (I j = 0; j < m; j++) {
            const I o = c * m + j;
            const float *dyo = dy + (n * (I)g.O + o) * L, *wo = w + o * taps;
            for (I kz = 0; kz < (I)g.kd; kz++) {
                const I zz = iz + (I)g.pd - kz * (I)g.dd;
                if (zz < 0) break;
                if (zz % sd != 0 || zz / sd >= Do) continue;
                for (I ki = 0; ki < (I)g.kh; ki++) {
                    const I yy = iy + (I)g.ph - ki * (I)g.dh;
                    if (yy < 0) break;
                    if (yy % sh != 0 || yy / sh >= Ho) continue;
                    for (I kj = 0; kj < (I)g.kw; kj++) {
                        const I xx = ix + (I)g.pw - kj * (I)g.dw;
                        if (xx < 0) break;
                        if (xx % sw != 0 || xx / sw >= Wo) continue;
                        s += wo[(kz * (I)g.kh + ki) * (I)g.kw + kj] * dyo[((zz / sd) * Ho + yy / sh) * Wo + xx / sw];
                    }
                }
            }
        }
        dx[e] = s;
    }
}

/* 32-bit indices when every index a kernel forms (up to total plus one grid stride) stays below 2^31 */
static inline bool conv_fits32(int64_t a, int64_t b) { return a < (1LL << 30) && b < (1LL << 30); }

/* ==== the launchers: plain C++ with FNN_LAUNCH (common.cuh), so spec/gpu/emulate.sh runs them too ==== */

int fnn_cuda_conv_im2col(int ordinal, float *col, const float *x, const void *geom, int64_t count,
                         int64_t row_stride, int64_t image_stride) {
    const conv_geom &g = *(const conv_geom *)geom;
    FNN_ASSERT(count >= 0 && row_stride >= 0 && image_stride >= 0);
    const int64_t total = count * g.C * g.taps * g.L;
    if (total == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("conv", ordinal));
    if (conv_fits32(total, count * g.C * g.S))
        FNN_LAUNCH(conv_im2col_kernel<int>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, col, x, g, (int)count,
                   (int)row_stride, (int)image_stride);
    else
        FNN_LAUNCH(conv_im2col_kernel<int64_t>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, col, x, g, count, row_stride,
                   image_stride);
    FNN_CUDA_CHECK("conv", cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_conv_col2im(int ordinal, float *dx, const float *col, const float *bias_in, const void *geom,
                         int64_t count) {
    const conv_geom &g = *(const conv_geom *)geom;
    FNN_ASSERT(count >= 0);
    const int64_t total = count * g.C * g.S;
    if (total == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("conv", ordinal));
    if (conv_fits32(total, count * g.C * g.taps * g.L))
        FNN_LAUNCH(conv_col2im_kernel<int>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, dx, col, bias_in, g, (int)count);
    else
        FNN_LAUNCH(conv_col2im_kernel<int64_t>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, dx, col, bias_in, g, count);
    FNN_CUDA_CHECK("conv", cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_conv_depthwise(int ordinal, float *y, const float *x, const float *w, const float *b, const void *geom,
                            int64_t count) {
    const conv_geom &g = *(const conv_geom *)geom;
    FNN_ASSERT(count >= 0 && g.depthwise);
    const int64_t total = count * g.O * g.L;
    if (total == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("conv", ordinal));
    if (conv_fits32(total, count * g.C * g.S))
        FNN_LAUNCH(conv_depthwise_kernel<int>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, y, x, w, b, g, (int)count);
    else
        FNN_LAUNCH(conv_depthwise_kernel<int64_t>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, y, x, w, b, g, count);
    FNN_CUDA_CHECK("conv", cudaGetLastError());
    return FNN_STATUS_OK;
}

int fnn_cuda_conv_depthwise_input_grad(int ordinal, float *dx, const float *dy, const float *w, const float *bias_in,
                                       const void *geom, int64_t count) {
    const conv_geom &g = *(const conv_geom *)geom;
    FNN_ASSERT(count >= 0 && g.depthwise);
    const int64_t total = count * g.C * g.S;
    if (total == 0) return FNN_STATUS_OK;
    FNN_TRY(fnn_cuda_use_device("conv", ordinal));
    if (conv_fits32(total, count * g.O * g.L))
        FNN_LAUNCH(conv_depthwise_input_grad_kernel<int>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, dx, dy, w, bias_in,
                   g, (int)count);
    else
        FNN_LAUNCH(conv_depthwise_input_grad_kernel<int64_t>, fnn_cuda_blocks(total), FNN_CUDA_THREADS, dx, dy, w,
                   bias_in, g, count);
    FNN_CUDA_CHECK("conv", cudaGetLastError());
    return FNN_STATUS_OK;
}

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
