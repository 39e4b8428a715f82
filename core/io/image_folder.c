/* image_folder.c: the C side of data.ImageFolder: a set of picture files with class ids and a
 * transform, and the batch maker that decodes, transforms and stacks pictures without Lua, on the
 * caller's thread or a loader's prefetch thread (core/io/prefetch.c).
 * defines: fnn_image_set_new, fnn_image_set_free, fnn_image_set_ref, fnn_image_take.
 * A set is immutable once made and reference-counted (atomically), so a prefetch thread can hold
 * it while Lua's handle is collected. */
#include "internal.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct fnn_image_set {
    atomic_int refs;
    int64_t n;
    char **paths;
    int64_t *labels;
    int nsteps;
    fnn_transform_step *steps;
};

void fnn_image_set_free(fnn_image_set *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    if (s->paths)
        for (int64_t i = 0; i < s->n; i++) free(s->paths[i]);
    free(s->paths);
    free(s->labels);
    free(s->steps);
    free(s);
}

fnn_image_set *fnn_image_set_ref(fnn_image_set *s) {
    if (s) atomic_fetch_add(&s->refs, 1);
    return s;
}

int fnn_image_set_new(fnn_image_set **out, int64_t n, const char *const *paths, const int64_t *labels, int nsteps,
                      const fnn_transform_step *steps) {
    FNN_CHECK(out, FNN_STATUS_ARG, "ImageFolder: no out pointer");
    *out = NULL;
    FNN_CHECK(n >= 0 && (n == 0 || (paths && labels)), FNN_STATUS_ARG, "ImageFolder: %lld files but no paths",
              (long long)n);
    FNN_CHECK(nsteps >= 0 && (nsteps == 0 || steps), FNN_STATUS_ARG, "ImageFolder: %d steps", nsteps);
    fnn_image_set *s = calloc(1, sizeof *s);
    FNN_CHECK(s, FNN_STATUS_OOM, "ImageFolder: out of memory");
    atomic_init(&s->refs, 1);
    s->n = n;
    s->nsteps = nsteps;
    s->paths = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
    s->labels = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    s->steps = malloc(sizeof(fnn_transform_step) * (size_t)(nsteps > 0 ? nsteps : 1));
    if (!s->paths || !s->labels || !s->steps) { fnn_image_set_free(s); return FNN_FAIL(FNN_STATUS_OOM, "ImageFolder: out of memory"); }
    for (int64_t i = 0; i < n; i++) {
        const char *src = paths[i] ? paths[i] : "";
        size_t len = strlen(src) + 1;
        s->paths[i] = malloc(len);
        if (s->paths[i]) memcpy(s->paths[i], src, len);
        if (!s->paths[i]) { fnn_image_set_free(s); return FNN_FAIL(FNN_STATUS_OOM, "ImageFolder: out of memory"); }
        s->labels[i] = labels[i];
    }
    if (nsteps) memcpy(s->steps, steps, sizeof(fnn_transform_step) * (size_t)nsteps);
    *out = s;
    return FNN_STATUS_OK;
}

/* the random state of item k of a batch drawn with seed (as data.transforms.state(seed), then
 * stepped by k, so an item's picture depends only on the batch's seed and its place) */
static uint64_t item_state(uint64_t seed, int64_t k) {
    return seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL + (uint64_t)k * 0xD1B54A32D192ED03ULL;
}

int fnn_image_take(fnn_tensor *inputs, fnn_tensor *targets, const fnn_image_set *s, int64_t m, const int64_t *ids,
                   uint64_t seed) {
    FNN_CHECK(inputs && targets && s, FNN_STATUS_ARG, "ImageFolder: take: expected two headers and a set");
    FNN_CHECK(m >= 1 && ids, FNN_STATUS_ARG, "ImageFolder: take: %lld items", (long long)m);
    fnn_tensor_init(inputs);
    fnn_tensor_init(targets);
    fnn_tensor *pics = calloc((size_t)m, sizeof(fnn_tensor));
    const fnn_tensor **ptrs = malloc(sizeof(fnn_tensor *) * (size_t)m);
    float *lab = malloc(sizeof(float) * (size_t)m);
    int rc = FNN_STATUS_OK;
    if (!pics || !ptrs || !lab) rc = FNN_FAIL(FNN_STATUS_OOM, "ImageFolder: out of memory for a batch of %lld", (long long)m);
    int64_t made = 0;
    for (int64_t k = 0; k < m && rc == FNN_STATUS_OK; k++) {
        int64_t i = ids[k];
        if (i < 1 || i > s->n) { rc = FNN_FAIL(FNN_STATUS_ARG, "ImageFolder: id %lld outside 1..%lld", (long long)i, (long long)s->n); break; }
        const char *path = s->paths[i - 1];
        fnn_tensor raw;
        fnn_tensor_init(&raw);
        fnn_tensor_init(&pics[k]);
        rc = fnn_image_load(&raw, path);
        if (rc) break;
        uint64_t st = item_state(seed, k);
        rc = fnn_transform_apply(&pics[k], &raw, s->nsteps, s->steps, &st);
        fnn_tensor_clear(&raw);
        if (rc) break;
        made = k + 1;
        if (k > 0 && (pics[k].shape[0] != pics[0].shape[0] || pics[k].shape[1] != pics[0].shape[1] ||
                      pics[k].shape[2] != pics[0].shape[2])) {
            rc = FNN_FAIL(FNN_STATUS_SHAPE,
                          "ImageFolder: %s is %s after the transform, %s is %s: a batch needs one size (add Resize or a crop)",
                          path, fnn_shape_of(&pics[k]).s, s->paths[ids[0] - 1], fnn_shape_of(&pics[0]).s);
            break;
        }
        ptrs[k] = &pics[k];
        lab[k] = (float)s->labels[i - 1];
    }
    if (rc == FNN_STATUS_OK) rc = fnn_stack(inputs, (int)m, ptrs, 0);
    if (rc == FNN_STATUS_OK) {
        int64_t shape[1] = {m};
        rc = fnn_tensor_from_data(targets, 1, shape, lab);
        if (rc) fnn_tensor_clear(inputs);
    }
    for (int64_t k = 0; pics && k < made; k++) fnn_tensor_clear(&pics[k]);
    free(pics);
    free(ptrs);
    free(lab);
    return rc;
}
