// spec/gpu/emulated_seq.cpp: cuda/rnn.cu and cuda/attention.cu on the host (see emulated.h), kernels
// and launchers both (the launchers sit above each file's host-side line, written with FNN_LAUNCH), so
// the rnn rows (fnn_cuda_rnn_rows, reached through backend.cu's row tables) and the table's entries
// are the real ones: the elementwise step kernels and the strided copy as plain calls (their
// grid-stride loops run the whole grid as one thread, at the index width the launcher picks), the
// attention row kernels as one block of attn_threads(Tk) host threads striding over every row (real
// barriers and shuffles). Nothing here is a copy.
#include "emulated.h"
#include "rnn_body.inc"   /* cut from cuda/rnn.cu */
#include "attention_body.inc"

EMULATED_BACKEND_ADD(seq) {
    b->seq_copy = fnn_cuda_seq_copy;
    b->attn_softmax = fnn_cuda_attn_softmax;
    b->attn_softmax_grad = fnn_cuda_attn_softmax_grad;
}
