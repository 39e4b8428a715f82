// spec/gpu/emulated_shape.cpp: the host emulation (spec/gpu/emulated.h) of cuda/shape.cu (cat/stack
// copies, contiguous, pad, pad_mode, repeat, tril/triu), cuda/sort.cu (sort, topk) and
// cuda/int64_reduce.cu, kernels and launchers both: the launchers sit above each file's host-side
// line, written with FNN_LAUNCH, so the int64 rows reach the real fnn_cuda_int_reduce (its
// index-width choices) and the shape and sort rows (backend.cu's row list) are the real ones
// (sort's scratch through fnn_alloc, sort_grad's zeroing through emulated.h's cudaMemsetAsync;
// contiguous through the table's strided_copy, copy.cu's). Grid-stride kernels run as one
// plain call; the block-per-line kernels (sort, the int64 block reduction), which stride over lines by
// gridDim and over elements by blockDim, run as one block of the launch's threads (real host threads
// and barriers) whose loop covers every line. Nothing here is a copy.
#include "emulated.h"
#include "shape_body.inc"   // cut from cuda/shape.cu, sort.cu, int64_reduce.cu by CMake
#include "sort_body.inc"
#include "int64_reduce_body.inc"
