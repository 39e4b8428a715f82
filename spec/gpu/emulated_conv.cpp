// spec/gpu/emulated_conv.cpp: cuda/conv.cu's kernels (im2col, col2im, the depthwise forward and input
// gradient) run on the host for the parity spec (spec/gpu/emulate.sh). All are grid-stride kernels with
// no barriers, so a plain call runs the whole grid as one thread, with the index type the real launcher
// picks.
#include "emulated.h"
#include "conv_body.inc"   /* cut from cuda/conv.cu */

static int m_conv_im2col(int, float *col, const float *x, const void *geom, int64_t count, int64_t row_stride,
                         int64_t image_stride) {
    const conv_geom &g = *(const conv_geom *)geom;
    const int64_t total = count * g.C * g.taps * g.L;
    if (total == 0) return 0;
    if (conv_fits32(total, count * g.C * g.S))
        conv_im2col_kernel<int>(col, x, g, (int)count, (int)row_stride, (int)image_stride);
    else
        conv_im2col_kernel<int64_t>(col, x, g, count, row_stride, image_stride);
    return 0;
}

static int m_conv_col2im(int, float *dx, const float *col, const float *bias_in, const void *geom, int64_t count) {
    const conv_geom &g = *(const conv_geom *)geom;
    const int64_t total = count * g.C * g.S;
    if (total == 0) return 0;
    if (conv_fits32(total, count * g.C * g.taps * g.L)) conv_col2im_kernel<int>(dx, col, bias_in, g, (int)count);
    else conv_col2im_kernel<int64_t>(dx, col, bias_in, g, count);
    return 0;
}

static int m_conv_depthwise(int, float *y, const float *x, const float *w, const float *b, const void *geom,
                            int64_t count) {
    const conv_geom &g = *(const conv_geom *)geom;
    const int64_t total = count * g.O * g.L;
    if (total == 0) return 0;
    if (conv_fits32(total, count * g.C * g.S)) conv_depthwise_kernel<int>(y, x, w, b, g, (int)count);
    else conv_depthwise_kernel<int64_t>(y, x, w, b, g, count);
    return 0;
}

static int m_conv_depthwise_input_grad(int, float *dx, const float *dy, const float *w, const float *bias_in,
                                       const void *geom, int64_t count) {
    const conv_geom &g = *(const conv_geom *)geom;
    const int64_t total = count * g.C * g.S;
    if (total == 0) return 0;
    if (conv_fits32(total, count * g.O * g.L)) conv_depthwise_input_grad_kernel<int>(dx, dy, w, bias_in, g, (int)count);
    else conv_depthwise_input_grad_kernel<int64_t>(dx, dy, w, bias_in, g, count);
    return 0;
}

EMULATED_BACKEND_ADD(conv) {
    b->conv_im2col = m_conv_im2col;
    b->conv_col2im = m_conv_col2im;
    b->conv_depthwise = m_conv_depthwise;
    b->conv_depthwise_input_grad = m_conv_depthwise_input_grad;
}
