/* conv.cu: the GPU side of core/ops/conv.c's convolutions (the conv family's rows, core/ops/conv.h:
 * conv1d/2d/3d, conv_transpose1d/2d/3d, depthwise): im2col and its adjoint col2im, for the geometry
 * of conv.h (every convolution as one forward convolution from [N, C, D, H, W] to [N, O, Do, Ho, Wo]),
 * and the device path around them, which runs the rest through the backend's table: the gemms
 * (cuBLAS, batched), the bias (broadcast add), db (reduce).
 *
 * im2col: a thread per col element (grid-stride), writes along l (an output position) so a warp
 * writes 32 neighbours and, at stride 1, reads 32 neighbours of x. Its layout is set by two strides
 * (element (n, row, l) at n image_stride + row row_stride + l), so the device path gets [images, C taps,
 * L] for the forward's gemms batched over images, or [C taps, images, L] for dw's one gemm over every
 * image. col2im is a gather, a thread per input element summing, in tap order, the col entries that
 * read it (the order of the CPU's scatter): no atomics, so the result is the same every run.
 * Depthwise convolutions (groups = C > 1) skip the col for direct kernels, forward and dx (a thread
 * per output / input element, taps in the CPU's order); their dw is the general col + gemm one (a sum
 * over every image and position, which cuBLAS does well).
 * Indices are 32-bit when every extent involved stays below 2^30 (div/mod are much cheaper), else
 * 64-bit.
 *
 * defines: fnn_cuda_conv_rows (the family's rows, core/ops/conv.h) */
#include "common.cuh"
#include "ops/conv.h"
#include "ops/elementwise_ops.h"

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

static int fnn_cuda_conv_im2col(int ordinal, float *col, const float *x, const void *geom, int64_t count,
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

static int fnn_cuda_conv_col2im(int ordinal, float *dx, const float *col, const float *bias_in, const void *geom,
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

static int fnn_cuda_conv_depthwise(int ordinal, float *y, const float *x, const float *w, const float *b,
                                   const void *geom, int64_t count) {
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

static int fnn_cuda_conv_depthwise_input_grad(int ordinal, float *dx, const float *dy, const float *w,
                                              const float *bias_in, const void *geom, int64_t count) {
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

/* ==== the device path (the rows below): the launchers above, the gemms, bias and sums through the
 * backend's table (cuBLAS gemm, the broadcast add, the reduce; the emulation's too) ====
 * Images go in chunks whose scratch stays under CONV_DEV_SCRATCH floats, and nothing is read back to
 * the host. Forward: col [images, C taps, L], y[n, g] = w[g] @ col[n, g] as one gemm batched over the
 * chunk's images per group (over the groups per image where there are more groups than images), then
 * + b by the broadcast add. dx: col[n, g] = w[g]^T @ dy[n, g] batched the same way, then col2im (a
 * gather) adds bias_in. dw: col laid out [C taps, images, L] and dy copied to [O, images, L], so one
 * gemm batched over the groups sums every image and position of the chunk (K = images L); later chunks
 * add on (beta 1). db: channel sums through the device reduce. Depthwise convolutions (groups = C)
 * have direct kernels for y and dx (no col, whose gemms would be Og rows per group); their dw is
 * the general one. */
enum { CONV_DEV_SCRATCH = 1 << 26 };   /* floats (256 MB) */

static int64_t dev_chunk(int64_t N, int64_t per_image) {
    int64_t c = per_image > 0 ? CONV_DEV_SCRATCH / per_image : N;
    return c < 1 ? 1 : c > N ? N : c;
}

/* y [N, C, S] += b[c] (in place through the broadcast add) */
static int dev_add_channels(int ord, float *y, const float *b, int64_t N, int64_t C, int64_t S) {
    const int64_t shape[3] = {N, C, S}, ys[3] = {C * S, S, 1}, bs[3] = {0, 1, 0};
    return fnn_cuda_binary(ord, FNN_BIN_ADD, y, y, ys, b, bs, 3, shape);
}

/* out[c] = the sum over n and i of v [N, C, S]: over S, then over N (each in double on the device) */
static int dev_channel_sums(int dev, float *out, const float *v, int64_t N, int64_t C,
                            int64_t S) {
    const int ord = fnn_device_ordinal(dev);
    if (N == 1) return fnn_cuda_reduce(ord, FNN_RED_SUM, out, NULL, v, C, S, 1, 1.0, 0.0);
    if (S == 1) return fnn_cuda_reduce(ord, FNN_RED_SUM, out, NULL, v, 1, N, C, 1.0, 0.0);
    const int64_t bytes = N * C * (int64_t)sizeof(float);
    float *part = (float *)fnn_alloc(dev, bytes);
    if (!part) return fnn_last_status();
    int rc = fnn_cuda_reduce(ord, FNN_RED_SUM, part, NULL, v, N * C, S, 1, 1.0, 0.0);
    if (!rc) rc = fnn_cuda_reduce(ord, FNN_RED_SUM, out, NULL, part, 1, N, C, 1.0, 0.0);
    fnn_free(dev, part, bytes);
    return rc;
}

/* y = conv(x, w) + b on the device */
static int dev_forward(const conv_geom *g, int dev, const float *x, const float *w, const float *b, float *y) {
    const fnn_backend *be = fnn_backend_for(dev);
    const int ord = fnn_device_ordinal(dev);
    const int64_t Og = g->Og, Kg = g->Kg, L = g->L, per = g->C * g->taps * g->L;
    if (Kg == 0) {   /* no input channels: the bias alone */
        FNN_TRY(be->fill(ord, y, g->N * g->O * L, 0.0f));
        return b ? dev_add_channels(ord, y, b, g->N, g->O, L) : FNN_STATUS_OK;
    }
    if (g->depthwise) return fnn_cuda_conv_depthwise(ord, y, x, w, b, g, g->N);
    const int64_t chunk = g->pointwise ? g->N : dev_chunk(g->N, per);
    const int64_t bytes = g->pointwise ? 0 : chunk * per * (int64_t)sizeof(float);
    float *col = NULL;
    if (bytes && !(col = (float *)fnn_alloc(dev, bytes))) return fnn_last_status();
    int rc = FNN_STATUS_OK;
    for (int64_t n0 = 0; n0 < g->N && !rc; n0 += chunk) {
        const int64_t nb = g->N - n0 < chunk ? g->N - n0 : chunk;
        const float *src = x + n0 * g->C * g->S;   /* a 1x1 conv reads x as its col (per = C S) */
        if (col) { rc = fnn_cuda_conv_im2col(ord, col, src, g, nb, L, per); src = col; }
        float *yc = y + n0 * g->O * L;
        if (!rc && nb >= g->groups)   /* y[n, gr] [Og, L] = w[gr] [Og, Kg] @ col[n, gr] [Kg, L] over the images */
            for (int64_t gr = 0; gr < g->groups && !rc; gr++)
                rc = fnn_cuda_gemm_prec(FNN_PREC_CONV, ord, 0, 0, (int)Og, (int)L, (int)Kg, 1.0f, w + gr * Og * Kg,
                                        (int)Kg, 0, src + gr * Kg * L, (int)L, per, 0.0f, yc + gr * Og * L, (int)L,
                                        g->O * L, (int)nb);
        else   /* over the groups, per image */
            for (int64_t n = 0; n < nb && !rc; n++)
                rc = fnn_cuda_gemm_prec(FNN_PREC_CONV, ord, 0, 0, (int)Og, (int)L, (int)Kg, 1.0f, w, (int)Kg, Og * Kg,
                                        src + n * per, (int)L, Kg * L, 0.0f, yc + n * g->O * L, (int)L, Og * L,
                                        (int)g->groups);
    }
    if (col) fnn_free(dev, col, bytes);
    if (!rc && b) rc = dev_add_channels(ord, y, b, g->N, g->O, L);
    return rc;
}

/* dx = conv^T(dy, w) + bias_in: col[n, gr] [Kg, L] = w[gr]^T [Kg, Og] @ dy[n, gr] [Og, L], then col2im */
static int dev_input_grad(const conv_geom *g, int dev, const float *w, const float *dy,
                          const float *bias_in, float *dx) {
    const int ord = fnn_device_ordinal(dev);
    const int64_t Og = g->Og, Kg = g->Kg, L = g->L, per = g->C * g->taps * g->L;
    if (g->depthwise) return fnn_cuda_conv_depthwise_input_grad(ord, dx, dy, w, bias_in, g, g->N);
    const int64_t chunk = g->pointwise ? g->N : dev_chunk(g->N, per);
    const int64_t bytes = g->pointwise ? 0 : chunk * per * (int64_t)sizeof(float);
    float *col = NULL;
    if (bytes && !(col = (float *)fnn_alloc(dev, bytes))) return fnn_last_status();
    int rc = FNN_STATUS_OK;
    for (int64_t n0 = 0; n0 < g->N && !rc; n0 += chunk) {
        const int64_t nb = g->N - n0 < chunk ? g->N - n0 : chunk;
        const float *dyc = dy + n0 * g->O * L;
        float *dst = col ? col : dx + n0 * g->C * g->S;   /* a 1x1 conv's gemm writes dx itself */
        if (nb >= g->groups)
            for (int64_t gr = 0; gr < g->groups && !rc; gr++)
                rc = fnn_cuda_gemm_prec(FNN_PREC_CONV, ord, 1, 0, (int)Kg, (int)L, (int)Og, 1.0f, w + gr * Og * Kg,
                                        (int)Kg, 0, dyc + gr * Og * L, (int)L, g->O * L, 0.0f, dst + gr * Kg * L,
                                        (int)L, per, (int)nb);
        else
            for (int64_t n = 0; n < nb && !rc; n++)
                rc = fnn_cuda_gemm_prec(FNN_PREC_CONV, ord, 1, 0, (int)Kg, (int)L, (int)Og, 1.0f, w, (int)Kg, Og * Kg,
                                        dyc + n * g->O * L, (int)L, Og * L, 0.0f, dst + n * per, (int)L, Kg * L,
                                        (int)g->groups);
        if (!rc && col) rc = fnn_cuda_conv_col2im(ord, dx + n0 * g->C * g->S, col, bias_in, g, nb);
    }
    if (col) fnn_free(dev, col, bytes);
    if (!rc && !col && bias_in) rc = dev_add_channels(ord, dx, bias_in, g->N, g->C, g->S);
    return rc;
}

/* dw[gr] [Og, Kg] = sum over images of dy[n, gr] @ col[n, gr]^T: per chunk, dy as [O, images L] and col
 * as [C taps, images L] (one image: both as they are for a 1x1 conv, dy as it is otherwise) */
static int dev_weight_grad(const fnn_backend *be, const conv_geom *g, int dev, const float *x, const float *dy,
                           float *dw) {
    const int ord = fnn_device_ordinal(dev);
    const int64_t Og = g->Og, Kg = g->Kg, L = g->L, rows = g->C * g->taps;
    const int64_t chunk = dev_chunk(g->N, (rows + g->O) * L);
    const bool plain = chunk == 1;   /* one image per gemm: dy needs no copy */
    const int64_t col_n = plain && g->pointwise ? 0 : chunk * rows * L, dyt_n = plain ? 0 : chunk * g->O * L;
    const int64_t bytes = (col_n + dyt_n) * (int64_t)sizeof(float);
    float *block = NULL;
    if (bytes && !(block = (float *)fnn_alloc(dev, bytes))) return fnn_last_status();
    float *col = col_n ? block : NULL, *dyt = dyt_n ? block + col_n : NULL;
    int rc = FNN_STATUS_OK;
    for (int64_t n0 = 0; n0 < g->N && !rc; n0 += chunk) {
        const int64_t nb = g->N - n0 < chunk ? g->N - n0 : chunk, K = nb * L;
        const float *a = dy + n0 * g->O * L, *bm = x + n0 * g->C * g->S;
        if (dyt) {   /* [nb, O, L] -> [O, nb, L] */
            const int64_t shape[3] = {g->O, nb, L}, stride[3] = {L, g->O * L, 1};
            rc = be->strided_copy(ord, dyt, a, 4, 3, shape, stride);
            a = dyt;
        }
        if (!rc && col) { rc = fnn_cuda_conv_im2col(ord, col, bm, g, nb, K, L); bm = col; }
        if (!rc)
            rc = fnn_cuda_gemm_prec(FNN_PREC_CONV, ord, 0, 1, (int)Og, (int)Kg, (int)K, 1.0f, a, (int)K, Og * K, bm,
                                    (int)K, Kg * K, n0 ? 1.0f : 0.0f, dw, (int)Kg, Og * Kg, (int)g->groups);
    }
    if (block) fnn_free(dev, block, bytes);
    return rc;
}

/* any of dx = conv^T(dy, w) + bias_in, dw, db on the device (as run_backward) */
static int dev_backward(const conv_geom *g, int dev, const float *x, const float *w, const float *dy,
                        const float *bias_in, float *dx, float *dw, float *db) {
    const fnn_backend *be = fnn_backend_for(dev);
    const int ord = fnn_device_ordinal(dev);
    int rc = FNN_STATUS_OK;
    if (g->N == 0 || g->O == 0 || g->C == 0) {   /* nothing flows through: bias_in or zeros */
        if (dx && g->N * g->C * g->S > 0) {
            rc = be->fill(ord, dx, g->N * g->C * g->S, 0.0f);
            if (!rc && bias_in) rc = dev_add_channels(ord, dx, bias_in, g->N, g->C, g->S);
        }
        if (!rc && dw && g->O * g->Kg > 0) rc = be->fill(ord, dw, g->O * g->Kg, 0.0f);
        if (!rc && db && g->O > 0)
            rc = g->C == 0 && g->N * g->L > 0 ? dev_channel_sums(dev, db, dy, g->N, g->O, g->L)
                                              : be->fill(ord, db, g->O, 0.0f);
        return rc;
    }
    if (dx) rc = dev_input_grad(g, dev, w, dy, bias_in, dx);
    if (!rc && dw) rc = dev_weight_grad(be, g, dev, x, dy, dw);
    if (!rc && db) rc = dev_channel_sums(dev, db, dy, g->N, g->O, g->L);
    return rc;
}

/* ==== the rows (core/ops/conv.h): the op's terms onto the geometry's convolution, as the CPU's rows:
 * a transposed op's forward is that convolution's input gradient (its bias as bias_in), its backward
 * that convolution's forward (dx), weight gradient (dw) and the channel sums of dy (db) ==== */
static int conv_forward_row(int ordinal, const fnn_conv_args *a) {
    FNN_TRY(dev_forward(a->g, fnn_make_device(FNN_DEVICE_CUDA, ordinal), a->x, a->w, a->b, a->y));
    const conv_geom *g = a->g;
    int64_t n = g->N * g->O * g->L, st[3][FNN_MAX_DIMS] = {{1}, {1}, {1}};
    if (a->act != FNN_ACT_RELU || n == 0) return FNN_STATUS_OK;
    /* y = relu(y) in place by the map formula, as linear's activation (cuda/linalg.cu) */
    const float *x[3] = {a->y, a->y, a->y};
    return fnn_cuda_map(ordinal, FNN_MAP_relu_f, a->y, x, &st[0][0], 1, &n, 0, 0);
}
static int conv_backward_row(int ordinal, const fnn_conv_args *a) {
    return dev_backward(a->g, fnn_make_device(FNN_DEVICE_CUDA, ordinal), a->x, a->w, a->dy, NULL, a->dx, a->dw,
                        a->db);
}
static int conv_transpose_forward_row(int ordinal, const fnn_conv_args *a) {
    return dev_backward(a->g, fnn_make_device(FNN_DEVICE_CUDA, ordinal), NULL, a->w, a->x, a->b, a->y, NULL, NULL);
}
static int conv_transpose_backward_row(int ordinal, const fnn_conv_args *a) {
    const conv_geom *g = a->g;
    const int dev = fnn_make_device(FNN_DEVICE_CUDA, ordinal);
    int rc = FNN_STATUS_OK;
    if (a->dx && g->N * g->O * g->L > 0) rc = dev_forward(g, dev, a->dy, a->w, NULL, a->dx);
    if (!rc && a->dw) rc = dev_backward(g, dev, a->dy, NULL, a->x, NULL, NULL, a->dw, NULL);
    if (!rc && a->db) rc = dev_channel_sums(dev, a->db, a->dy, g->N, g->C, g->S);
    return rc;
}

/* the family's rows: every op (registry_spec checks it) */
extern "C" const fnn_conv_row fnn_cuda_conv_rows[] = {
    {"conv1d", conv_forward_row, conv_backward_row},
    {"conv2d", conv_forward_row, conv_backward_row},
    {"conv3d", conv_forward_row, conv_backward_row},
    {"conv_transpose1d", conv_transpose_forward_row, conv_transpose_backward_row},
    {"conv_transpose2d", conv_transpose_forward_row, conv_transpose_backward_row},
    {"conv_transpose3d", conv_transpose_forward_row, conv_transpose_backward_row},
    {NULL, NULL, NULL},
};

/* ==== host side: nothing more; spec/gpu/emulate.sh compiles everything above this line for the host ==== */
