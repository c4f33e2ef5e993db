/* The bump allocator, see arena.h. */
#include "arena.h"
#include "alloc.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SANITIZE_ADDRESS__)
#define GS_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GS_ARENA_ASAN 1
#endif
#endif
#ifdef GS_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define ALIGN alignof(max_align_t)

struct chunk {
  struct chunk *next;
  size_t cap, used;
  alignas(max_align_t) unsigned char data[];
};

struct gs_arena {
  struct chunk *head; /* the chunk being filled; then full and large ones */
  size_t chunk;       /* the size of a new chunk */
  size_t used, held;
};

static _Thread_local struct gs_arena *current;
static _Thread_local bool filling;

static struct chunk *chunk_new(size_t cap) {
  struct chunk *c;
  if (cap > SIZE_MAX - sizeof *c)
    return NULL;
  c = gs_malloc(sizeof *c + cap);
  if (c == NULL)
    return NULL;
  c->next = NULL;
  c->cap = cap;
  c->used = 0;
  POISON(c->data, cap);
  return c;
}

static void chunk_free(struct chunk *c) {
  UNPOISON(c->data, c->cap); /* malloc's own bookkeeping may touch it */
  gs_free(c);
}

struct gs_arena *gs_arena_new(size_t chunk) {
  struct gs_arena *a = gs_malloc(sizeof *a);
  if (a == NULL)
    return NULL;
  a->head = NULL;
  a->chunk = chunk < 4096 ? 4096 : chunk;
  a->used = a->held = 0;
  return a;
}

void gs_arena_free(struct gs_arena *a) {
  if (a == NULL)
    return;
  if (current == a)
    gs_arena_leave();
  while (a->head != NULL) {
    struct chunk *next = a->head->next;
    chunk_free(a->head);
    a->head = next;
  }
  gs_free(a);
}

void *gs_arena_alloc(struct gs_arena *a, size_t size) {
  struct chunk *c = a->head;
  size_t need;
  void *p;
  if (size == 0)
    size = 1;
  if (size > SIZE_MAX - ALIGN)
    return NULL;
  need = (size + ALIGN - 1) & ~(ALIGN - 1);
  if (c == NULL || c->cap - c->used < need) {
    if (need > a->chunk / 4) {
      /* A large block: a chunk of its own, behind the one being filled so
       * that the rest of that one is not wasted. */
      struct chunk *big = chunk_new(need);
      if (big == NULL)
        return NULL;
      big->used = need;
      if (c != NULL) {
        big->next = c->next;
        c->next = big;
      } else {
        a->head = big;
      }
      a->held += need;
      a->used += need;
      UNPOISON(big->data, size);
      return big->data;
    }
    c = chunk_new(a->chunk);
    if (c == NULL)
      return NULL;
    c->next = a->head;
    a->head = c;
    a->held += c->cap;
  }
  p = c->data + c->used;
  c->used += need;
  a->used += need;
  UNPOISON(p, size);
  return p;
}

bool gs_arena_owns(const struct gs_arena *a, const void *p) {
  const unsigned char *q = p;
  for (const struct chunk *c = a->head; c != NULL; c = c->next)
    if ((uintptr_t)q >= (uintptr_t)c->data && (uintptr_t)q < (uintptr_t)(c->data + c->used))
      return true;
  return false;
}

void gs_arena_reset(struct gs_arena *a) {
  size_t held = a->held;
  /* Several chunks: the next fill of the same size should fit in one, so
   * they are replaced by one chunk holding them all (no malloc per chunk
   * on every reuse). */
  if (a->head != NULL && a->head->next != NULL) {
    while (a->head != NULL) {
      struct chunk *next = a->head->next;
      chunk_free(a->head);
      a->head = next;
    }
    a->held = 0;
    if (held > a->chunk)
      a->chunk = held;
    a->head = chunk_new(a->chunk); /* none on failure: made again on use */
    a->held = a->head != NULL ? a->head->cap : 0;
  } else if (a->head != NULL) {
    POISON(a->head->data, a->head->cap);
    a->head->used = 0;
  }
  a->used = 0;
}

size_t gs_arena_used(const struct gs_arena *a) { return a->used; }

size_t gs_arena_held(const struct gs_arena *a) { return a->held; }

void gs_arena_enter(struct gs_arena *a) {
  current = a;
  filling = a != NULL;
}

void gs_arena_pause(void) { filling = false; }

void gs_arena_leave(void) {
  current = NULL;
  filling = false;
}

void *gs_arena_hook_malloc(size_t size) {
  if (filling && current != NULL)
    return gs_arena_alloc(current, size);
  return gs_malloc(size);
}

void gs_arena_hook_free(void *p) {
  if (p == NULL || (current != NULL && gs_arena_owns(current, p)))
    return;
  gs_free(p);
}
