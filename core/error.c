/* error.c: the thread-local error slot every entry point writes on failure,
 * and shapes as text for messages. */
#include "internal.h"
#include <stdarg.h>
#include <string.h>

static _Thread_local char last_error[1024];
static _Thread_local char last_where[256];
static _Thread_local int last_status;

const char *fnn_version(void) { return "0.1.0"; }

int fnn_set_error(int status, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    snprintf(last_where, sizeof last_where, "%s:%d", file, line);
    last_status = status;
    if (fnn_profile_maybe()) fnn_profile_failed();   /* fnn.profile: the failed op's bracket ends here */
    return status;
}

const char *fnn_last_error(void) { return last_error[0] ? last_error : "no error"; }
const char *fnn_last_error_where(void) { return last_where; }
int fnn_last_status(void) { return last_status; }

fnn_shape_text fnn_shape_dims(int ndim, const int64_t *shape) {
    fnn_shape_text r;
    int pos = snprintf(r.s, sizeof r.s, "[");
    for (int i = 0; i < ndim && pos < (int)sizeof r.s - 24; i++)
        pos += snprintf(r.s + pos, sizeof r.s - pos, i ? ",%lld" : "%lld", (long long)shape[i]);
    snprintf(r.s + pos, sizeof r.s - pos, "]");
    return r;
}

fnn_shape_text fnn_shape_of(const fnn_tensor *t) {
    if (t->ndim < 0) { fnn_shape_text r; strcpy(r.s, "(empty)"); return r; }
    return fnn_shape_dims(t->ndim, t->shape);
}

int fnn_tensor_shape_str(const fnn_tensor *t, char *buf, int len) {
    fnn_shape_text s = fnn_shape_of(t);
    return snprintf(buf, (size_t)len, "%s", s.s);
}
