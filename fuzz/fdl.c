/* fuzz/fdl.c: the Lua half of the checkpoint loaders (fnn.load_training, fnn.load: the metadata,
 * the training state's JSON, the optimizer state, the tensors matched to a model), driven by
 * fuzz/fdl.lua. The container itself is fuzz/checkpoint.c's; here every input becomes a valid,
 * checksummed .fdl (written by the core), so the mutations reach past the CRCs.
 * Input: lines "key=value" (metadata), "@name=d1,d2,.." (a tensor of zeros), "!key" (drop a key
 * or tensor), over a real training checkpoint's contents. */
#include "lua_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    harness_run("fdl", data, size);
    return 0;
}
