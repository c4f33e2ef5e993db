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
static _Thread_local unsigned long failures; /* NULLs returned on this thread */

void gs_alloc_fail_after(unsigned long n) {
  atomic_store(&count, 0);
  atomic_store(&hit, false);
  atomic_store(&fail_at, n);
}

bool gs_alloc_fail_hit(void) { return atomic_load(&hit); }

unsigned long gs_alloc_failures(void) { return failures; }

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

/* Counts a NULL result (size 0 may legitimately give NULL). */
static void *counted(void *p, size_t size) {
  if (p == NULL && size != 0)
    failures++;
  return p;
}

void *gs_malloc(size_t size) { return counted(should_fail() ? NULL : malloc(size), size); }

void *gs_calloc(size_t n, size_t size) {
  return counted(should_fail() ? NULL : calloc(n, size), n * size);
}

void *gs_realloc(void *p, size_t size) {
  return counted(should_fail() ? NULL : realloc(p, size), size);
}

char *gs_strdup(const char *s) {
  size_t len = strlen(s) + 1;
  char *copy = gs_malloc(len);
  return copy != NULL ? memcpy(copy, s, len) : NULL;
}

void gs_free(void *p) { free(p); }
