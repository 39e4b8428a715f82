/* fuzz/text.c: the text dataset reader (fnn_text_encode, fnn_text_encode_file: strict UTF-8 or
 * bytes, a vocabulary built or given) and its inverse fnn_text_decode.
 * Input: one mode byte, then the text. Bit 0: bytes mode. Bit 1: split the text at a point the
 * second byte chooses, build the vocabulary from the first part and encode the second under it.
 * Bit 2: read through a file (mmap) instead of memory. A text that encodes must decode back to
 * exactly its bytes, with every id in 1..V and the vocabulary strictly ascending. */
#include "common.h"
#include "internal.h"   /* fnn_data_i64 */

static int encode(fnn_tensor *ids, fnn_tensor *vocab, const uint8_t *s, size_t n, const fnn_tensor *given,
                  int bytes, int file) {
    if (file) return fnn_text_encode_file(ids, vocab, fuzz_file(s, n), given, bytes);
    return fnn_text_encode(ids, vocab, (const char *)s, (int64_t)n, given, bytes);
}

static void round_trip(const fnn_tensor *vocab, const fnn_tensor *ids, const uint8_t *s, size_t n, int bytes) {
    int64_t count = fnn_tensor_numel(ids), v = fnn_tensor_numel(vocab), len = -1;
    FUZZ_ASSERT(ids->dtype == FNN_DTYPE_INT64 && ids->ndim == 1 && count <= (int64_t)n, "text: %lld ids for %zu bytes",
                (long long)count, n);
    const int64_t *cp = fnn_data_i64(vocab);
    for (int64_t i = 1; i < v; i++) FUZZ_ASSERT(cp[i - 1] < cp[i], "text: vocabulary not ascending at %lld", (long long)i);
    const int64_t *id = fnn_data_i64(ids);
    for (int64_t i = 0; i < count; i++) FUZZ_ASSERT(id[i] >= 1 && id[i] <= v, "text: id %lld of %lld", (long long)id[i], (long long)v);
    char *back = malloc(n + 1);
    FUZZ_ASSERT(back, "text: out of memory");
    FUZZ_ASSERT(fnn_text_decode(vocab, ids, bytes, back, (int64_t)n, &len) == FNN_STATUS_OK, "text: decode: %s",
                fnn_last_error());
    FUZZ_ASSERT(len == (int64_t)n && memcmp(back, s, n) == 0, "text: decode gave %lld bytes of %zu, or others",
                (long long)len, n);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int bytes = data[0] & 1, split = data[0] & 2, file = (data[0] & 4) != 0;
    size_t cut = data[1];
    data += 2, size -= 2;
    if (cut > size) cut = size;
    fnn_tensor ids, vocab;
    size_t first = split ? cut : size;
    if (encode(&ids, &vocab, data, first, NULL, bytes, file) != FNN_STATUS_OK) {
        FUZZ_ASSERT(!bytes, "text: bytes mode refused %zu bytes: %s", first, fnn_last_error());
        fuzz_expect_error("text", "text_encode: ");
        return 0;
    }
    round_trip(&vocab, &ids, data, first, bytes);
    fnn_tensor_clear(&ids);
    if (split) {
        /* the rest under the first part's vocabulary: an unknown character is an error naming it */
        if (encode(&ids, NULL, data + cut, size - cut, &vocab, bytes, file) == FNN_STATUS_OK) {
            round_trip(&vocab, &ids, data + cut, size - cut, bytes);
            fnn_tensor_clear(&ids);
        } else {
            fuzz_expect_error("text", "text_encode: ");
        }
    }
    fnn_tensor_clear(&vocab);
    fnn_empty_cache();
    return 0;
}
