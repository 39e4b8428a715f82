// spec/gpu/emulated_pool.cpp: cuda/pool.cu and cuda/batch_norm.cu run on the host (spec/gpu/emulated.h;
// see emulated_backend.cpp), kernels and launchers both: the launchers sit above each file's host-side
// line, written with FNN_LAUNCH, and both files' rows are listed in cuda/backend.cu's fnn_cuda_row_tables
// (cuda/norm.cu's list batch_norm's), which the emulated table points at. The pooling and
// upsampling kernels are grid-stride loops: one plain call runs the whole grid as one thread, at the
// index width the launcher picks. The batch_norm kernels that reduce per channel run, in block mode,
// as one block of real host threads (barriers, warp shuffles) whose grid-stride loop covers every
// channel; in thread mode (short channels) and eval as plain grid-stride calls. Nothing here is a copy.
#include "emulated.h"
#include "pool_body.inc"   /* cut from cuda/pool.cu and batch_norm.cu by CMake */
#include "batch_norm_body.inc"
