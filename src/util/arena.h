/* gpushare — a bump allocator for short-lived trees of small blocks.
 *
 * Parsing a list page with jansson makes one heap block per value and
 * frees them all a moment later: at 50,000 pods, half of the start-up CPU
 * went to malloc and free (docs/benchmarks.md, start-up). An arena hands
 * out memory by moving a pointer and forgets it all at once.
 *
 * The hook pair lets a library that takes allocation functions (jansson,
 * json_set_alloc_funcs) use the calling thread's arena for a while:
 *
 *   gs_arena_enter(a);   hook allocations on this thread come from a
 *   doc = json_loadb(...);
 *   gs_arena_pause();    hook allocations are malloc again; hook frees of
 *                        a's memory are still no-ops
 *   ... read doc; copy (json_deep_copy) whatever must outlive it ...
 *   json_decref(doc);    frees a's blocks for nothing, the rest for real
 *   gs_arena_leave();
 *   gs_arena_reset(a);
 *
 * Nothing allocated from an arena may be kept past gs_arena_leave, nor be
 * freed by another thread. Under AddressSanitizer, reset memory is
 * poisoned, so a block kept by mistake is reported where it is used.
 */
#ifndef GPUSHARE_UTIL_ARENA_H
#define GPUSHARE_UTIL_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct gs_arena;

/* chunk: bytes per chunk (more are added as needed; a block larger than a
 * chunk gets its own). NULL when out of memory. */
struct gs_arena *gs_arena_new(size_t chunk);
void gs_arena_free(struct gs_arena *a);

/* size bytes aligned for any type; NULL when out of memory. */
void *gs_arena_alloc(struct gs_arena *a, size_t size);
/* Whether p points into memory a handed out (since its last reset). */
bool gs_arena_owns(const struct gs_arena *a, const void *p);
/* Forgets every block; keeps the largest chunk for reuse. */
void gs_arena_reset(struct gs_arena *a);
/* Bytes handed out since the last reset, and held from the system. */
size_t gs_arena_used(const struct gs_arena *a);
size_t gs_arena_held(const struct gs_arena *a);

/* The calling thread's arena for the hooks (see above). */
void gs_arena_enter(struct gs_arena *a);
void gs_arena_pause(void);
void gs_arena_leave(void);

/* malloc/free for libraries: from the thread's entered arena, else
 * gs_malloc/gs_free (the allocation test hook applies to both). */
void *gs_arena_hook_malloc(size_t size);
void gs_arena_hook_free(void *p);

#endif
