// spec/gpu/emulated_elementwise.cpp: cuda/elementwise.cu (the broadcast add, sub, mul, div) run on the
// host (spec/gpu/emulated.h; see emulated_backend.cpp), kernels and launcher both: the launcher sits
// above the file's host-side line, written with FNN_LAUNCH, so the map row and the bias adds run the real
// fnn_cuda_binary (its dim coalescing, the contiguous fast path and the 32/64-bit index choice). Both
// kernels are grid-stride loops without barriers: one plain call runs the whole grid as one thread.
// A file of its own: elementwise.cu's Layout, coalesce and launch would sit beside map.cu's in
// emulated_backend.cpp. Nothing here is a copy.
#include "emulated.h"
#include "elementwise_body.inc"   /* cut from cuda/elementwise.cu by CMake */
