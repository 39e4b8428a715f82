/* fuzz/image.c: the picture decoders behind fnn.image.load (core/io/image.c: libpng through png.c,
 * TurboJPEG). Input: the file as it is; the first bytes choose the decoder (PNG or JPEG signature,
 * else the refusal). A picture either loads as float32 [C, H, W] (C 1 or 3, every value in [0, 1])
 * or fails with a message naming image.load; anything else aborts. */
#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    fnn_tensor t;
    fnn_tensor_init(&t);
    if (fnn_image_load(&t, path) != FNN_STATUS_OK) {
        fuzz_expect_error("image", "image.load: ");
        return 0;
    }
    FUZZ_ASSERT(t.ndim == 3 && (t.shape[0] == 1 || t.shape[0] == 3) && t.dtype == FNN_DTYPE_FLOAT32,
                "image: a picture of %d dims, %lld channels", t.ndim, (long long)t.shape[0]);
    const float *d = fnn_tensor_data(&t);
    int64_t n = fnn_tensor_numel(&t);
    for (int64_t i = 0; i < n; i++) FUZZ_ASSERT(d[i] >= 0.0f && d[i] <= 1.0f, "image: value %g at %lld", d[i], (long long)i);
    fnn_tensor_clear(&t);
    return 0;
}
