/* sample.c: one token id from one position's logits, for decoding (nn.Sampler).
 *
 * defines: fnn_sample
 *
 * The warpers run in Hugging Face's order: divide by the temperature, keep the top_k largest
 * logits (and any equal to the k-th, as HF's TopKLogitsWarper does), keep the nucleus of what is
 * left (the fewest best tokens whose renormalised probability reaches top_p, at least one: a
 * token stays when the mass of the tokens above it is below top_p, HF's TopPLogitsWarper), then
 * draw one id in proportion to exp((x - max) / t) over what is kept, walking the kept ids in
 * increasing order against one U[0,1) from this thread's random source (so fnn_manual_seed makes
 * a generation reproducible). Temperature 0 is the argmax (the first of equal maxima) and draws
 * nothing. A -inf logit (a masked token) is never drawn; nan and +inf are refused.
 *
 * Not differentiable and not in the op registry: it returns a number, not a tensor. One [V] row
 * per call is a few passes over V floats (a heap or a partition for the k-th largest, a heap of the
 * best 64 candidates and a sort of those for the nucleus), far below what a thread team would pay
 * back, so it runs on the calling thread. V = 50257 costs ~0.1 ms greedy, ~0.5 ms with top_k. */
#include "../internal.h"
#include <math.h>
#include <stdlib.h>

typedef struct {
    float x;        /* the logit */
    int64_t i;      /* its 0-based id */
    double w;       /* exp((x - max) / t): the unnormalised probability */
} sample_cand;

/* best first: larger logit, then smaller id (distinct ids make the order total) */
static int cand_by_logit(const void *pa, const void *pb) {
    const sample_cand *a = pa, *b = pb;
    if (a->x != b->x) return a->x > b->x ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int cand_by_id(const void *pa, const void *pb) {
    const sample_cand *a = pa, *b = pb;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* ---- selection: the k-th largest logit (top_k), the best candidates first (top_p) ---- */
enum { SAMPLE_HEAP_MAX = 4096, SAMPLE_NUCLEUS_FIRST = 64 };

/* a min-heap of floats (the smallest of those kept at h[0]): move h[at] down to its place */
static void float_sift(float *h, int64_t k, int64_t at) {
    const float v = h[at];
    for (;;) {
        int64_t c = 2 * at + 1;
        if (c >= k) break;
        if (c + 1 < k && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[at] = h[c];
        at = c;
    }
    h[at] = v;
}

/* the k-th largest of v[0..n), 1 <= k <= n (Wirth's selection; reorders v) */
static float wirth_kth_largest(float *v, int64_t n, int64_t k) {
    int64_t l = 0, r = n - 1, want = k - 1;
    while (l < r) {
        const float pivot = v[want];
        int64_t i = l, j = r;
        do {
            while (v[i] > pivot) i++;
            while (pivot > v[j]) j--;
            if (i <= j) { float t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }
        } while (i <= j);
        if (j < want) l = i;
        if (want < i) r = j;
    }
    return v[want];
}

/* the k-th largest of the n finite values among x[0..V) (stride s), 1 <= k < n; scratch [n].
 * A small k keeps the k best in a heap: one pass whose test rarely passes (predictable), where
 * partitioning mispredicts half its branches; a large k partitions a copy. */
static float kth_largest(const float *x, int64_t V, int64_t s, int64_t n, int64_t k, float *scratch) {
    if (k <= SAMPLE_HEAP_MAX && k * 8 <= n) {
        int64_t j = 0, m = 0;
        for (; m < k; j++) if (x[j * s] != -INFINITY) scratch[m++] = x[j * s];
        for (int64_t r = k / 2 - 1; r >= 0; r--) float_sift(scratch, k, r);
        for (; j < V; j++) {
            const float v = x[j * s];
            if (v > scratch[0]) { scratch[0] = v; float_sift(scratch, k, 0); }
        }
        return scratch[0];
    }
    int64_t m = 0;
    for (int64_t j = 0; j < V; j++) if (x[j * s] != -INFINITY) scratch[m++] = x[j * s];
    return wirth_kth_largest(scratch, m, k);
}

static inline bool cand_better(const sample_cand *a, const sample_cand *b) {
    return a->x > b->x || (a->x == b->x && a->i < b->i);
}

/* a heap of candidates with the worst at h[0]: move h[at] down to its place */
static void cand_sift(sample_cand *h, int64_t k, int64_t at) {
    const sample_cand v = h[at];
    for (;;) {
        int64_t c = 2 * at + 1;
        if (c >= k) break;
        if (c + 1 < k && cand_better(&h[c], &h[c + 1])) c++;   /* the worse child */
        if (!cand_better(&v, &h[c])) break;
        h[at] = h[c];
        at = c;
    }
    h[at] = v;
}

/* the K best of c[0..n) into c[0..K), best first (the others stay behind, in some order) */
static void best_prefix(sample_cand *c, int64_t n, int64_t K) {
    if (K * 4 >= n) { qsort(c, (size_t)n, sizeof *c, cand_by_logit); return; }
    for (int64_t r = K / 2 - 1; r >= 0; r--) cand_sift(c, K, r);
    for (int64_t j = K; j < n; j++) {
        if (cand_better(&c[j], &c[0])) {
            const sample_cand t = c[0];
            c[0] = c[j];
            c[j] = t;
            cand_sift(c, K, 0);
        }
    }
    qsort(c, (size_t)K, sizeof *c, cand_by_logit);
}

/* logits [V], [1, V] or [1, 1, V] -> *id (1-based) */
int fnn_sample(int64_t *id, const fnn_tensor *logits, double temperature, int64_t top_k, double top_p) {
    FNN_CHECK(id != NULL, FNN_STATUS_ARG, "sample: id is NULL");
    FNN_TRY(fnn_check_input("sample", logits));
    const int nd = logits->ndim;
    bool one_row = nd >= 1 && nd <= 3;
    for (int d = 0; one_row && d < nd - 1; d++) one_row = logits->shape[d] == 1;
    FNN_CHECK(one_row && logits->shape[nd - 1] >= 1, FNN_STATUS_SHAPE,
              "sample: logits %s are not one position's logits ([V], [1, V] or [1, 1, V] with V >= 1)",
              fnn_shape_of(logits).s);
    FNN_CHECK(fnn_in_host_memory(logits), FNN_STATUS_DEVICE,
              "sample: logits %s are on a GPU; sampling reads them on the CPU (move them with :to('cpu'))",
              fnn_shape_of(logits).s);
    FNN_CHECK(isfinite(temperature) && temperature >= 0, FNN_STATUS_ARG,
              "sample: temperature is %g, expected a finite number >= 0", temperature);
    FNN_CHECK(top_k >= 0, FNN_STATUS_ARG, "sample: top_k is %lld, expected >= 1 (or 0: off)", (long long)top_k);
    FNN_CHECK(top_p > 0 && top_p <= 1, FNN_STATUS_ARG, "sample: top_p is %g, expected a number in (0, 1]", top_p);

    const int64_t V = logits->shape[nd - 1], s = logits->stride[nd - 1];
    const float *x = fnn_data(logits);

    /* the max (first wins), and refuse what softmax cannot weigh */
    int64_t arg = -1, finite = 0;
    float max = -INFINITY;
    for (int64_t j = 0; j < V; j++) {
        const float v = x[j * s];
        FNN_CHECK(!isnan(v) && v != INFINITY, FNN_STATUS_ARG, "sample: logit %lld of %s is %s",
                  (long long)(j + 1), fnn_shape_of(logits).s, isnan(v) ? "nan" : "inf");
        if (v == -INFINITY) continue;
        finite++;
        if (arg < 0 || v > max) { max = v; arg = j; }
    }
    FNN_CHECK(finite > 0, FNN_STATUS_ARG, "sample: every logit of %s is -inf", fnn_shape_of(logits).s);
    if (temperature == 0) { *id = arg + 1; return FNN_STATUS_OK; }

    /* one block: the candidates, then (for top_k) a scratch copy of their logits */
    const int64_t bytes = finite * (int64_t)(sizeof(sample_cand) + (top_k > 0 ? sizeof(float) : 0));
    sample_cand *c = fnn_alloc(FNN_DEVICE_CPU, bytes);
    if (!c) return fnn_last_status();

    /* top_k: keep the logits >= the k-th largest (ties with it stay, as in HF) */
    float thr = -INFINITY;
    if (top_k > 0 && top_k < finite) thr = kth_largest(x, V, s, finite, top_k, (float *)(c + finite));
    int64_t n = 0;
    for (int64_t j = 0; j < V; j++) {
        const float v = x[j * s];
        if (v == -INFINITY || v < thr) continue;
        c[n].x = v;
        c[n].i = j;
        c[n].w = exp(((double)v - (double)max) / temperature);   /* the max's weight is 1 */
        n++;
    }

    /* top_p: best first, keep while the mass above stays below top_p of the total, then back to id
     * order. The nucleus is usually a few tokens: order the best 64 first, and 8x more while the
     * mass of those ordered stays below top_p (the whole row only for a flat distribution) */
    if (top_p < 1 && n > 1) {
        double total = 0;
        for (int64_t j = 0; j < n; j++) total += c[j].w;
        const double reach = top_p * total;
        int64_t K = n < SAMPLE_NUCLEUS_FIRST ? n : SAMPLE_NUCLEUS_FIRST, m;
        for (;;) {
            best_prefix(c, n, K);
            double above = 0;
            m = 0;
            while (m < K && (m == 0 || above < reach)) above += c[m++].w;
            if (m < K || above >= reach || K == n) break;   /* the cut lies within the ordered prefix */
            K = K * 8 < n ? K * 8 : n;
        }
        n = m;
        qsort(c, (size_t)n, sizeof *c, cand_by_id);
    }

    /* the draw: the first id whose running mass passes u * total */
    double total = 0;
    for (int64_t j = 0; j < n; j++) total += c[j].w;
    const double u = fnn_random_uniform() * total;
    double acc = 0;
    int64_t pick = arg;   /* u * total can round up to total: then the last token that has weight */
    for (int64_t j = 0; j < n; j++) {
        if (c[j].w > 0) pick = c[j].i;
        acc += c[j].w;
        if (u < acc) break;
    }
    fnn_free(FNN_DEVICE_CPU, c, bytes);
    *id = pick + 1;
    return FNN_STATUS_OK;
}
