/* fuzz/checkpoint.c: the checkpoint container, one parser for .fdl and safetensors files
 * (fnn_safetensors_open validates the header whole; read/verify check each tensor's bytes).
 * Input: the file. Every tensor the header admits is read and must have the shape it declared;
 * every metadata value that looks like JSON goes through fnn_json_parse, as fnn.load_training's
 * training state does, and the tree is walked. */
#include "common.h"

static int walk(const fnn_json *j, int depth) {
    int type = fnn_json_type(j), n = 0;
    FUZZ_ASSERT(type >= 0 && type <= 6 && depth < 100000, "checkpoint: json type %d", type);
    if (type == 4) FUZZ_ASSERT(fnn_json_string(j) != NULL, "checkpoint: json string without text");
    if (type == 5 || type == 6) {
        int size = fnn_json_size(j);
        for (int i = 0; i < size; i++) {
            const fnn_json *c = fnn_json_child(j, i);
            FUZZ_ASSERT(c != NULL, "checkpoint: json child %d of %d missing", i, size);
            if (type == 6) FUZZ_ASSERT(fnn_json_key(c) != NULL, "checkpoint: json member without a key");
            n += walk(c, depth + 1);
        }
    }
    return n + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    fnn_safetensors *f = NULL;
    if (fnn_safetensors_open(&f, path) != FNN_STATUS_OK) {
        FUZZ_ASSERT(f == NULL, "checkpoint: a failed open returned a file");
        fuzz_expect_error("checkpoint", path);
        return 0;
    }
    int n = fnn_safetensors_count(f);
    FUZZ_ASSERT(n >= 0 && (size_t)n <= size, "checkpoint: %d tensors in %zu bytes", n, size);
    for (int i = 0; i < n; i++) {
        int st, ndim;
        int64_t shape[FNN_MAX_DIMS];
        FUZZ_ASSERT(fnn_safetensors_name(f, i) != NULL, "checkpoint: tensor %d has no name", i);
        FUZZ_ASSERT(fnn_safetensors_info(f, i, &st, &ndim, shape) == 0, "checkpoint: info %d", i);
        FUZZ_ASSERT(ndim >= 0 && ndim <= FNN_MAX_DIMS && st >= 0 && st <= 5, "checkpoint: ndim %d dtype %d", ndim, st);
        fnn_tensor t;
        if (fnn_safetensors_read(&t, f, i) != FNN_STATUS_OK) {
            fuzz_expect_error("checkpoint", path);   /* a CRC failure */
            FUZZ_ASSERT(fnn_safetensors_verify(f, i) != FNN_STATUS_OK, "checkpoint: read failed but verify passed");
            continue;
        }
        FUZZ_ASSERT(t.ndim == ndim, "checkpoint: read %d dims, header %d", t.ndim, ndim);
        for (int d = 0; d < ndim; d++) FUZZ_ASSERT(t.shape[d] == shape[d], "checkpoint: dim %d differs", d);
        FUZZ_ASSERT(fnn_safetensors_verify(f, i) == FNN_STATUS_OK, "checkpoint: read passed but verify failed");
        fnn_tensor_clear(&t);
    }
    int m = fnn_safetensors_meta_count(f);
    for (int i = 0; i < m; i++) {
        const char *k = fnn_safetensors_meta_key(f, i), *v = fnn_safetensors_meta_value(f, i);
        FUZZ_ASSERT(k && v, "checkpoint: metadata %d without key or value", i);
        if (v[0] != '{' && v[0] != '[') continue;
        fnn_json *j = fnn_json_parse(v, strlen(v));
        if (!j) { fuzz_expect_error("checkpoint", "json: "); continue; }
        walk(j, 0);
        fnn_json_free(j);
    }
    fnn_safetensors_close(f);
    fnn_empty_cache();
    return 0;
}
