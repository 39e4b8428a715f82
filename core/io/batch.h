/* batch.h: the pieces of the loader's batch makers shared between core/io files (text.c's windows,
 * used by data.c's fnn_take_batch_into) */
#pragma once
#include "internal.h"

/* take_windows' checks of the tokens, context, stride and ids */
int fnn_take_windows_check(const fnn_tensor *tokens, int64_t context, int64_t stride, int64_t n, const int64_t *ids);
/* x, y [n, context] (contiguous) = the windows ids of tokens (checked) and the same shifted by one */
void fnn_take_windows_write(int64_t *x, int64_t *y, const fnn_tensor *tokens, int64_t context, int64_t stride,
                            int64_t n, const int64_t *ids);
