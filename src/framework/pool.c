/* The framework's worker pool (pool.h). One mutex guards the job slot;
 * chunks are handed out with an atomic counter, so workers and the caller
 * take the next chunk without the mutex.
 *
 * The caller waits only for the workers that joined the job: once its own
 * chunks are done it closes the job, and a worker woken after that (late:
 * the CPUs were busy, as inside kube-scheduler beside its goroutines) finds
 * nothing to do. Waiting for every worker to wake cost milliseconds there. */
#include "pool.h"

#include <gpushare/alloc.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define POOL_MAX 16

struct job {
  size_t n, chunk;
  void (*fn)(void *ctx, size_t begin, size_t end);
  void *ctx;
  atomic_size_t next; /* the next chunk's start */
};

struct gs_pool {
  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers: a job or stop */
  pthread_cond_t done; /* caller: every worker left the job */
  pthread_t tid[POOL_MAX];
  size_t want, nthreads;
  bool started, busy, stop;
  uint64_t gen;  /* jobs posted */
  size_t active; /* workers running the current job's chunks */
  struct job *job; /* the open job, NULL once its caller closed it */
};

static void run_chunks(struct job *job) {
  for (;;) {
    size_t begin = atomic_fetch_add_explicit(&job->next, job->chunk, memory_order_relaxed);
    size_t end;
    if (begin >= job->n)
      return;
    end = job->n - begin < job->chunk ? job->n : begin + job->chunk;
    job->fn(job->ctx, begin, end);
  }
}

static void *worker(void *arg) {
  struct gs_pool *p = arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    struct job *job;
    while (!p->stop && p->gen == seen)
      pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop)
      break;
    seen = p->gen;
    job = p->job;
    if (job == NULL)
      continue; /* closed before this worker woke: nothing left */
    p->active++;
    pthread_mutex_unlock(&p->mu);
    run_chunks(job);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0)
      pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

struct gs_pool *gs_pool_new(size_t workers) {
  struct gs_pool *p = gs_calloc(1, sizeof *p);
  if (p == NULL)
    return NULL;
  p->want = workers < POOL_MAX ? workers : POOL_MAX;
  if (pthread_mutex_init(&p->mu, NULL) != 0)
    goto free_pool;
  if (pthread_cond_init(&p->wake, NULL) != 0)
    goto free_mu;
  if (pthread_cond_init(&p->done, NULL) != 0)
    goto free_wake;
  return p;
free_wake:
  pthread_cond_destroy(&p->wake);
free_mu:
  pthread_mutex_destroy(&p->mu);
free_pool:
  gs_free(p);
  return NULL;
}

void gs_pool_free(struct gs_pool *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (size_t i = 0; i < p->nthreads; i++)
    pthread_join(p->tid[i], NULL);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  gs_free(p);
}

/* Starts the workers once (under p->mu); as many as start. */
static void start_workers(struct gs_pool *p) {
  p->started = true;
  while (p->nthreads < p->want &&
         pthread_create(&p->tid[p->nthreads], NULL, worker, p) == 0)
    p->nthreads++;
}

void gs_pool_run(struct gs_pool *p, size_t n, size_t chunk,
                 void (*fn)(void *ctx, size_t begin, size_t end), void *ctx) {
  struct job job = {.n = n, .chunk = chunk > 0 ? chunk : 1, .fn = fn, .ctx = ctx};
  bool shared = false;
  atomic_init(&job.next, 0);
  if (p != NULL && p->want > 0 && n > job.chunk) {
    pthread_mutex_lock(&p->mu);
    if (!p->busy && !p->stop) {
      if (!p->started)
        start_workers(p);
      if (p->nthreads > 0) {
        p->busy = shared = true;
        p->job = &job;
        p->gen++;
        pthread_cond_broadcast(&p->wake);
      }
    }
    pthread_mutex_unlock(&p->mu);
  }
  run_chunks(&job);
  if (!shared)
    return;
  pthread_mutex_lock(&p->mu);
  p->job = NULL; /* closed: a worker not yet woken will not join */
  while (p->active > 0)
    pthread_cond_wait(&p->done, &p->mu);
  p->busy = false;
  pthread_mutex_unlock(&p->mu);
}
