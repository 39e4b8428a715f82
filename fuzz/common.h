/* common.h: what the C fuzz targets share. The parsers read files, so each input becomes a file:
 * one memfd per process, rewritten per input and named by its /proc path (no disk traffic, and a
 * reopen through the path sees the new contents). A parser must either succeed or fail with a
 * message naming what it parses; anything else (a crash, a sanitizer report, an empty or foreign
 * message) aborts, which libFuzzer records as a crash. */
#ifndef FASTNN_FUZZ_COMMON_H
#define FASTNN_FUZZ_COMMON_H
#define _GNU_SOURCE
#include "fastnn.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int fuzz_fd = -1;
static char fuzz_path[64];

/* the path of a file holding exactly bytes[0, n) */
static const char *fuzz_file(const void *bytes, size_t n) {
    if (fuzz_fd < 0) {
        fnn_set_num_threads(1);   /* deterministic, and one input at a time is all libFuzzer runs */
        fuzz_fd = memfd_create("fastnn-fuzz", MFD_CLOEXEC);
        if (fuzz_fd < 0) { perror("fuzz: memfd_create"); abort(); }
        snprintf(fuzz_path, sizeof fuzz_path, "/proc/self/fd/%d", fuzz_fd);
    }
    if (ftruncate(fuzz_fd, 0) != 0 || (n && pwrite(fuzz_fd, bytes, n, 0) != (ssize_t)n)) {
        perror("fuzz: writing the input");
        abort();
    }
    return fuzz_path;
}

/* a failure must leave a message that names the op (or the file) */
static void fuzz_expect_error(const char *what, const char *needle) {
    const char *msg = fnn_last_error();
    if (!msg || !*msg || !strstr(msg, needle)) {
        fprintf(stderr, "fuzz %s: failed without a message naming '%s': '%s'\n", what, needle, msg ? msg : "(null)");
        abort();
    }
}

#define FUZZ_ASSERT(cond, ...) \
    do { if (!(cond)) { fprintf(stderr, "fuzz: " __VA_ARGS__); fputc('\n', stderr); abort(); } } while (0)

#endif
