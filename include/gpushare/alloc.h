/* gpushare — the allocation wrappers every layer allocates through, plugins
 * included, so that one test hook (src/util/alloc.h: the Nth allocation
 * fails) reaches every failure path (curl's "torture" tests).
 *
 * Memory from these is plain malloc memory: gs_free() is free(), and memory
 * a caller is told to free() may come from here. Thread-safe. */
#ifndef GPUSHARE_ALLOC_H
#define GPUSHARE_ALLOC_H

#include <stddef.h>

void *gs_malloc(size_t size);
void *gs_calloc(size_t n, size_t size);
void *gs_realloc(void *p, size_t size);
char *gs_strdup(const char *s);
/* Accepts NULL. */
void gs_free(void *p);

#endif
