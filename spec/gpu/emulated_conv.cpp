// spec/gpu/emulated_conv.cpp: cuda/conv.cu (im2col, col2im, the depthwise forward and input gradient)
// run on the host for the parity spec (spec/gpu/emulate.sh), kernels and launchers both: the launchers
// sit above the file's host-side line, written with FNN_LAUNCH, so the table points at the real
// fnn_cuda_* entries. All are grid-stride kernels with no barriers: one plain call runs the whole grid
// as one thread, at the index width the launcher picks. The GEMMs between them go through the table's
// gemm, which stays emulated_backend.cpp's naive loop (cuBLAS on a GPU).
#include "emulated.h"
#include "conv_body.inc"   /* cut from cuda/conv.cu */

EMULATED_BACKEND_ADD(conv) {
    b->conv_im2col = fnn_cuda_conv_im2col;
    b->conv_col2im = fnn_cuda_conv_col2im;
    b->conv_depthwise = fnn_cuda_conv_depthwise;
    b->conv_depthwise_input_grad = fnn_cuda_conv_depthwise_input_grad;
}
