/* crc32c.c: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TensorBoard's
 * event records. Debian packages no C library for it (zlib's crc32 is the other polynomial), so
 * this is the table-driven form, checked against the published check value
 * crc32c("123456789") = 0xE3069283 (spec/tensorboard_spec.lua).
 * defines: fnn_crc32c, fnn_crc32c_masked (the record format's rotated-and-offset form); fastnn.h declares them. */
#include "internal.h"
#include <pthread.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;   /* the table is written once, before any read */

static void fill_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t fnn_crc32c(const void *data, size_t n) {
    pthread_once(&table_once, fill_table);
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* TFRecord's mask: a CRC stored beside the data it covers is rotated right by 15 bits and offset,
 * so a CRC of data that itself holds CRCs does not degenerate (tensorflow/core/lib/hash/crc32c.h) */
uint32_t fnn_crc32c_masked(const void *data, size_t n) {
    uint32_t c = fnn_crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}
