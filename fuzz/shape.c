/* fuzz/shape.c: the tensor-from-table path and every creator that parses Lua-supplied shapes
 * (fnn.tensor, fnn.long, zeros/ones/empty/full/rand/randn, reshape/view), driven by fuzz/shape.lua,
 * which decodes the input into Lua values: nested tables, numbers (NaN, inf, huge, negative,
 * fractional), strings, booleans and nils. */
#include "lua_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    harness_run("shape", data, size);
    return 0;
}
