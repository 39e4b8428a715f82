// spec/gpu/emulated_conv.cpp: cuda/conv.cu (im2col, col2im, the depthwise forward and input gradient,
// and the device path around them) run on the host for the parity spec (spec/gpu/emulate.sh), kernels,
// launchers and rows: all sit above the file's host-side line, the launchers written with FNN_LAUNCH,
// and the rows are listed in cuda/backend.cu's fnn_cuda_row_tables, which the emulated table points
// at. All are grid-stride kernels with no barriers: one plain call runs the whole grid as one thread,
// at the index width the launcher picks. The GEMMs between them go through the table's gemm, which
// stays emulated_backend.cpp's naive loop (cuBLAS on a GPU). Nothing here is a copy.
#include "emulated.h"
#include "conv_body.inc"   /* cut from cuda/conv.cu */
