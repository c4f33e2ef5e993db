/* The extender's prioritize scores spread over the nodes of one request
 * (place.h, gs_place_scores_normalize; issue 32, docs/benchmarks.md §5c). */
#include <gpushare/place.h>

#include <stdint.h>

void gs_place_scores_normalize(struct gs_node_result *res, size_t n, int64_t max) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < n; i++) {
    if (res[i].code != GS_EOK)
      continue;
    lo = res[i].score100 < lo ? res[i].score100 : lo;
    hi = res[i].score100 > hi ? res[i].score100 : hi;
  }
  for (size_t i = 0; i < n; i++) {
    if (res[i].code != GS_EOK)
      res[i].score = 0;
    else if (hi == lo)
      res[i].score = max; /* no node better than another: all at the top */
    else /* score100 is 0..100: no overflow; rounded half up */
      res[i].score = ((res[i].score100 - lo) * max * 2 + (hi - lo)) / (2 * (hi - lo));
  }
}
