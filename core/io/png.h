/* png.h: what png.c lends the rest of the I/O layer (not public API: fastnn.h has the file forms). */
#ifndef FASTNN_IO_PNG_H
#define FASTNN_IO_PNG_H
#include <stddef.h>
#include <stdint.h>

/* *out (malloc'ed, *len bytes; the caller frees it) <- the PNG file of a width x height image of
 * 8-bit pixels, channels 1..4, rows top first (the layout of fnn_png_write) */
int fnn_png_encode(uint8_t **out, size_t *len, int width, int height, int channels, const uint8_t *pixels);

#endif
