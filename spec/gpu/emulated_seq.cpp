// spec/gpu/emulated_seq.cpp: cuda/rnn.cu and cuda/attention.cu on the host (see emulated.h), kernels
// and launchers both (the launchers sit above each file's host-side line, written with FNN_LAUNCH),
// and with them the families' rows (fnn_cuda_rnn_rows, fnn_cuda_attention_rows, which backend.cu's
// row tables point at): the elementwise step kernels and the strided copy as plain calls (their
// grid-stride loops run the whole grid as one thread, at the index width the launcher picks), the
// attention row kernels as one block of attn_threads(Tk) host threads striding over every row (real
// barriers and shuffles). No table entries are left here; nothing here is a copy.
#include "emulated.h"
#include "rnn_body.inc"   /* cut from cuda/rnn.cu */
#include "attention_body.inc"
