/* fuzz/csv.c: the CSV dataset reader (data.CsvDataset, Lua over the core), driven by fuzz/csv.lua.
 * Input: one option byte (header, delimiter, missing, target columns), then the file. */
#include "lua_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    harness_run("csv", data, size);
    return 0;
}
