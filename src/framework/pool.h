/* gpushare — a small pool of worker threads that share one range of work
 * with the calling thread (the framework's per-node verbs over thousands of
 * nodes, as kube-scheduler scores nodes on parallel goroutines).
 *
 * One job at a time: a call that finds the pool busy runs its whole range
 * on the calling thread. Workers start at the first job, not before.
 */
#ifndef GPUSHARE_FRAMEWORK_POOL_H
#define GPUSHARE_FRAMEWORK_POOL_H

#include <stddef.h>

struct gs_pool;

/* A pool of up to workers threads (0: none; every run is the caller's).
 * NULL on allocation failure. */
struct gs_pool *gs_pool_new(size_t workers);
/* Stops and joins the workers. Accepts NULL. No run may be in progress. */
void gs_pool_free(struct gs_pool *pool);

/* Calls fn(ctx, begin, end) over [0, n) in chunks of at most chunk, on the
 * calling thread and the pool's workers, and returns when every chunk is
 * done. Chunks run in no particular order and concurrently: fn must be
 * safe for that. With pool NULL, busy, or without workers (or when they
 * cannot be started), every chunk runs on the caller. Whatever the caller
 * holds (a lock) is held for the workers too: they run between this call's
 * start and its return. */
void gs_pool_run(struct gs_pool *pool, size_t n, size_t chunk,
                 void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

#endif
