/* data.c: STUB, being written. */
#include "internal.h"

int fnn_read_idx(fnn_tensor *out, const char *path, double scale) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "read_idx: not implemented yet"); }
int fnn_take_rows(fnn_tensor *out, const fnn_tensor *x, int64_t n, const int64_t *ids) { (void)0; return FNN_FAIL(FNN_STATUS_INTERNAL, "take_rows: not implemented yet"); }
