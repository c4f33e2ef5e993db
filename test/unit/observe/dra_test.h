/* The DRA feed's tests (test_dra.c, test_dra_place.c), header-only: a
 * ResourceSlice or a ResourceClaim as JSON text, fed to the cache as the
 * watch would. */
#ifndef GS_DRA_TEST_H
#define GS_DRA_TEST_H

#include <stdbool.h>

#include "dra.h"

#include "../test_json.h"

/* feed: gs__dra_slice, gs__dra_slice_delete, gs__dra_claim or
 * gs__dra_claim_delete. */
static inline void dra_feed(struct gs__dra *d, struct gs_sched *s, const char *text,
                            void (*feed)(struct gs__dra *, struct gs_sched *, const json_t *)) {
  json_t *j = gs_test_json(text);
  feed(d, s, j);
  json_decref(j);
}

#endif
