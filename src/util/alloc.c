/* The allocation hook, see alloc.h. */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* fail_at: 0 = unarmed; else the count at which an allocation fails. The
 * counter runs only while armed, so the unarmed path is one load. */
static atomic_ulong fail_at;
static atomic_ulong count;
static atomic_bool hit;

void gs_alloc_fail_after(unsigned long n) {
  atomic_store(&count, 0);
  atomic_store(&hit, false);
  atomic_store(&fail_at, n);
}

bool gs_alloc_fail_hit(void) { return atomic_load(&hit); }

unsigned long gs_alloc_count(void) { return atomic_load(&count); }

/* True when this allocation is the one to fail. */
static bool should_fail(void) {
  unsigned long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
  if (at == 0)
    return false;
  if (atomic_fetch_add(&count, 1) + 1 != at)
    return false;
  atomic_store(&fail_at, 0); /* one failure per arming */
  atomic_store(&hit, true);
  return true;
}

void *gs_malloc(size_t size) { return should_fail() ? NULL : malloc(size); }

void *gs_calloc(size_t n, size_t size) { return should_fail() ? NULL : calloc(n, size); }

void *gs_realloc(void *p, size_t size) { return should_fail() ? NULL : realloc(p, size); }

char *gs_strdup(const char *s) {
  size_t len = strlen(s) + 1;
  char *copy = gs_malloc(len);
  return copy != NULL ? memcpy(copy, s, len) : NULL;
}

void gs_free(void *p) { free(p); }
