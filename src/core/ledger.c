/* The per-GPU memory ledger.
 *
 * Layout, sized for 5,000 nodes × 8 GPUs and 50,000 pods in a few MiB:
 * - nodes: an array of pointers kept in ascending name order (for listing;
 *   an insert shifts pointers, which is cheap at that scale) plus a hash
 *   index by name, because filter and prioritize look up every node of the
 *   request (a binary search over 5,000 names was 30% of a decision:
 *   docs/benchmarks.md). Each node is its own heap record so views stay
 *   put while the array moves; the index's keys point at the records' names.
 * - allocations: one heap block each (record, parts and strings together),
 *   found by UID through a hash map whose key points at the record's own
 *   uid, and listed per node in an array (swap-remove, O(1)).
 * - topology matrices: interned by content and reference-counted. The
 *   public struct gs_topo has fixed 64×64 arrays (8 KiB), so a private copy
 *   per node would cost 40 MiB at 5,000 nodes; machines of one model share
 *   one matrix, so a cluster holds a handful.
 *
 * Charges (used_mib, npods, owner) are always derived from the allocation
 * parts by account(), so release frees exactly what was charged
 * and a node rebuild is a plain re-charge. Every change of a node's view is
 * logged (ledger_log.h).
 *
 * One file of about 900 lines: the records, their charges (pods and DRA
 * claims, docs/dra.md) and
 * their lookups share one private layout that no other file should see.
 */
#include <gpushare/ledger.h>

#include "alloc.h"
#include "caps.h"
#include "ledger_log.h"
#include "strmap.h"

#include <gpushare/topo.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct topo_ref {
  struct gs_topo topo;
  uint64_t hash;
  size_t refs;
  bool has_choice;
  uint8_t choice[GS_TOPO_TABLE_GPUS * 256]; /* see gs_node.topo_choice */
  uint8_t set_score[256];                   /* see gs_node.topo_set_score */
};

struct alloc_rec;

struct node_rec {
  struct gs_node view;
  struct topo_ref *topo; /* NULL when the node has no topology */
  struct alloc_rec **allocs;
  size_t nallocs, cap_allocs;
  /* The record, its name and its first GPU array are one heap block, so a
   * lookup's name compare and the placement that follows touch adjacent
   * memory (docs/benchmarks.md, core). A rebuild to more GPUs than the
   * block holds moves view.gpus to its own array. */
  struct gs_gpu *inline_gpus;
  uint32_t ninline;
};

struct alloc_rec {
  struct gs_alloc view; /* strings and parts point into this block */
  struct node_rec *node;
  size_t slot; /* index in node->allocs */
  struct gs_alloc_part parts[];
  /* followed by the ns, name, uid and node strings */
};

struct gs_ledger {
  uint32_t unit_mib;
  struct node_rec **nodes;
  size_t nnodes, cap_nodes;
  struct gs_strmap *allocs; /* uid → struct alloc_rec */
  struct gs_strmap *by_name; /* node name → struct node_rec */
  struct topo_ref **topos;
  size_t ntopos, cap_topos;
  struct gs__ledger_log log; /* which node views changed (gs_ledger_changed_since) */
};

/* Grows *arr (elements of size elem) so it holds at least need. */
static enum gs_err grow(void **arr, size_t *cap, size_t need, size_t elem) {
  size_t ncap = *cap ? *cap : 4;
  void *fresh;
  if (need <= *cap)
    return GS_EOK;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / elem)
      return GS_ENOMEM;
    ncap *= 2;
  }
  fresh = gs_realloc(*arr, ncap * elem);
  if (fresh == NULL)
    return GS_ENOMEM;
  *arr = fresh;
  *cap = ncap;
  return GS_EOK;
}

static bool str_fits(const char *s, size_t max) { return strnlen(s, max + 1) <= max; }

/* ---- ledger ------------------------------------------------------------- */

struct gs_ledger *gs_ledger_new(uint32_t unit_mib) {
  struct gs_ledger *ledger;
  if (unit_mib != GS_UNIT_GIB && unit_mib != GS_UNIT_128MIB)
    return NULL;
  ledger = gs_calloc(1, sizeof *ledger);
  if (ledger == NULL)
    return NULL;
  ledger->unit_mib = unit_mib;
  ledger->allocs = gs_strmap_new();
  ledger->by_name = gs_strmap_new();
  if (ledger->allocs == NULL || ledger->by_name == NULL)
    goto free_ledger;
  return ledger;

free_ledger:
  gs_strmap_free(ledger->allocs);
  gs_strmap_free(ledger->by_name);
  gs_free(ledger);
  return NULL;
}

static void node_free(struct gs_ledger *ledger, struct node_rec *node);

void gs_ledger_free(struct gs_ledger *ledger) {
  if (ledger == NULL)
    return;
  for (size_t i = 0; i < ledger->nnodes; i++)
    node_free(ledger, ledger->nodes[i]);
  gs_free(ledger->nodes);
  gs_strmap_free(ledger->allocs);
  gs_strmap_free(ledger->by_name);
  assert(ledger->ntopos == 0); /* every node released its matrix */
  gs_free(ledger->topos);
  gs_free(ledger);
}

uint32_t gs_ledger_unit_mib(const struct gs_ledger *ledger) { return ledger->unit_mib; }

/* ---- topology interning --------------------------------------------------- */

/* The whole struct is hashed and compared, not just the n × n prefix, so
 * the copy is faithful whatever a caller put past it. */
static uint64_t topo_hash(const struct gs_topo *t) {
  const unsigned char *b = (const unsigned char *)t;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < sizeof *t; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Every answer of gs_topo_choose for a small matrix (at most 8 × 256
 * searches, a few milliseconds once per distinct matrix). An answer the
 * search could not give stays 0: placement then asks again. Running out of
 * memory is reported (the house rule: an allocation failure is an error
 * and changes nothing), not degraded into a silent cache miss. */
static enum gs_err topo_precompute(struct topo_ref *ref) {
  const struct gs_topo *t = &ref->topo;
  if (t->n == 0 || t->n > GS_TOPO_TABLE_GPUS)
    return GS_EOK;
  for (uint32_t mask = 1; mask < (1u << t->n); mask++)
    ref->set_score[mask] = (uint8_t)gs_topo_set_score(t, mask);
  for (uint32_t k = 1; k <= t->n; k++) {
    for (uint32_t mask = 1; mask < (1u << t->n); mask++) {
      uint64_t set = 0;
      enum gs_err err;
      if ((uint32_t)__builtin_popcount(mask) < k)
        continue;
      err = gs_topo_choose(t, mask, k, &set);
      if (err == GS_ENOMEM)
        return err;
      if (err == GS_EOK)
        ref->choice[(k - 1) * 256 + mask] = (uint8_t)set;
    }
  }
  ref->has_choice = true;
  return GS_EOK;
}

/* Takes a reference on the interned copy of t, creating it if needed. */
static enum gs_err topo_acquire(struct gs_ledger *ledger, const struct gs_topo *t,
                                struct topo_ref **ret) {
  uint64_t hash = topo_hash(t);
  struct topo_ref *ref;
  for (size_t i = 0; i < ledger->ntopos; i++) {
    ref = ledger->topos[i];
    if (ref->hash == hash && memcmp(&ref->topo, t, sizeof *t) == 0) {
      ref->refs++;
      *ret = ref;
      return GS_EOK;
    }
  }
  if (grow((void **)&ledger->topos, &ledger->cap_topos, ledger->ntopos + 1,
           sizeof *ledger->topos) != GS_EOK)
    return GS_ENOMEM;
  ref = gs_calloc(1, sizeof *ref);
  if (ref == NULL)
    return GS_ENOMEM;
  ref->topo = *t;
  ref->hash = hash;
  ref->refs = 1;
  if (topo_precompute(ref) != GS_EOK) {
    gs_free(ref);
    return GS_ENOMEM;
  }
  ledger->topos[ledger->ntopos++] = ref;
  *ret = ref;
  return GS_EOK;
}

static void topo_release(struct gs_ledger *ledger, struct topo_ref *ref) {
  if (ref == NULL || --ref->refs > 0)
    return;
  for (size_t i = 0; i < ledger->ntopos; i++) {
    if (ledger->topos[i] == ref) {
      ledger->topos[i] = ledger->topos[--ledger->ntopos];
      break;
    }
  }
  gs_free(ref);
}

/* ---- charges ---------------------------------------------------------------- */

static uint64_t part_mib(const struct gs_alloc *a, const struct gs_alloc_part *p) {
  return p->units * a->unit_mib;
}

/* MiB a part charges on its GPU: a whole-device claim part takes it all. */
static uint64_t charge_mib(const struct gs_gpu *gpu, const struct gs_alloc *a,
                           const struct gs_alloc_part *p) {
  if (a->kind == GS_ALLOC_CLAIM && p->units == GS_CLAIM_WHOLE)
    return gpu->total_mib;
  return part_mib(a, p);
}

static bool charges_mem(const struct gs_alloc *a) {
  return a->kind == GS_ALLOC_MEM || a->kind == GS_ALLOC_CLAIM;
}

/* GPUs of the node this allocation touches (parts on missing GPUs skipped). */
static uint64_t touched_mask(const struct gs_alloc *a, uint32_t ngpus) {
  uint64_t mask = 0;
  for (uint32_t i = 0; i < a->nparts; i++)
    if (a->parts[i].gpu < ngpus)
      mask |= UINT64_C(1) << a->parts[i].gpu;
  return mask;
}

static bool alloc_touches(const struct gs_alloc *a, uint32_t gpu) {
  for (uint32_t i = 0; i < a->nparts; i++)
    if (a->parts[i].gpu == gpu)
      return true;
  return false;
}

/* Another whole-GPU allocation on the node claiming gpu, or NULL. */
static const struct gs_alloc *next_owner(const struct node_rec *node, uint32_t gpu,
                                         const struct alloc_rec *leaving) {
  for (size_t i = 0; i < node->nallocs; i++) {
    const struct alloc_rec *r = node->allocs[i];
    if (r != leaving && r->view.kind == GS_ALLOC_WHOLE && alloc_touches(&r->view, gpu))
      return &r->view;
  }
  return NULL;
}

/* Charges (add) or discharges rec's allocation on node: its memory on the
 * GPUs its parts name (none for whole GPUs), a pod on each GPU it touches,
 * and a whole GPU's owner (parts on missing GPUs skipped). */
static void account(struct node_rec *node, struct alloc_rec *rec, bool add) {
  const struct gs_alloc *a = &rec->view;
  struct gs_gpu *gpus = node->view.gpus;
  uint32_t ngpus = node->view.ngpus;
  uint64_t mask = touched_mask(a, ngpus);
  for (uint32_t i = 0; i < a->nparts && charges_mem(a); i++) {
    struct gs_gpu *gpu;
    uint64_t mib;
    if (a->parts[i].gpu >= ngpus)
      continue;
    gpu = &gpus[a->parts[i].gpu];
    mib = charge_mib(gpu, a, &a->parts[i]);
    assert(add || gpu->used_mib >= mib);
    gpu->used_mib = add ? gpu->used_mib + mib : gpu->used_mib - mib;
  }
  for (uint32_t g = 0; g < ngpus; g++) {
    if (!(mask >> g & 1))
      continue;
    if (add) {
      gpus[g].npods++;
      /* Restore may record two owners of one GPU (the apiserver's truth);
       * the first one shows, the next takes over when it leaves. */
      if (a->kind == GS_ALLOC_WHOLE && gpus[g].owner == NULL)
        gpus[g].owner = a;
    } else {
      assert(gpus[g].npods > 0);
      gpus[g].npods--;
      if (gpus[g].owner == a)
        gpus[g].owner = next_owner(node, g, rec);
    }
  }
}

/* ---- nodes ------------------------------------------------------------------- */

/* Index of the first node whose name is >= name. */
static size_t node_search(const struct gs_ledger *ledger, const char *name) {
  size_t lo = 0, hi = ledger->nnodes;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(ledger->nodes[mid]->view.name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static struct node_rec *node_find(const struct gs_ledger *ledger, const char *name) {
  if (name == NULL)
    return NULL;
  return gs_strmap_get(ledger->by_name, name);
}

static void alloc_free_all(struct gs_ledger *ledger, struct node_rec *node) {
  for (size_t i = 0; i < node->nallocs; i++) {
    void *gone = gs_strmap_del(ledger->allocs, node->allocs[i]->view.uid);
    assert(gone == node->allocs[i]);
    (void)gone;
    gs_free(node->allocs[i]);
  }
  node->nallocs = 0;
}

static void node_free(struct gs_ledger *ledger, struct node_rec *node) {
  if (node == NULL)
    return;
  alloc_free_all(ledger, node);
  gs_free(node->allocs);
  topo_release(ledger, node->topo);
  if (node->view.gpus != node->inline_gpus)
    gs_free(node->view.gpus);
  gs_free(node);
}

/* GPU count and per-GPU capacity in MiB from a spec (docs/contract.md §3). */
static enum gs_err spec_gpus(const struct gs_ledger *ledger, const struct gs_node_spec *spec,
                             uint32_t *ret_n, uint64_t ret_total_mib[GS_MAX_GPUS]) {
  uint64_t totals[GS_MAX_GPUS] = {0};
  uint64_t n = spec->gpu_count;
  /* Topology nodes often advertise only aliyun.com/gpu. */
  if (n == 0 && spec->mode == GS_MODE_TOPOLOGY)
    n = spec->whole_gpus;
  if (n > GS_MAX_GPUS)
    return GS_ERANGE;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t units = spec->has_per_gpu ? spec->per_gpu_units[i] : spec->gpu_mem_units / n;
    if (units > GS__PART_MIB_MAX / ledger->unit_mib)
      return GS_ERANGE;
    totals[i] = units * ledger->unit_mib;
  }
  *ret_n = (uint32_t)n;
  memcpy(ret_total_mib, totals, sizeof totals);
  return GS_EOK;
}

static void gpus_init(struct gs_gpu *gpus, uint32_t n, const uint64_t *total_mib,
                      uint64_t unhealthy_mask) {
  for (uint32_t i = 0; i < n; i++) {
    gpus[i] = (struct gs_gpu){.index = i, .total_mib = total_mib[i],
                              .healthy = !(unhealthy_mask >> i & 1)};
  }
}

static enum gs_err node_update(struct gs_ledger *ledger, struct node_rec *node,
                               const struct gs_node_spec *spec, uint32_t n,
                               const uint64_t *total_mib, const struct gs_topo *topo) {
  struct topo_ref *ref = NULL;
  struct gs_gpu *gpus = NULL;
  bool rebuild = n != node->view.ngpus;
  enum gs_err err;
  for (uint32_t i = 0; !rebuild && i < n; i++)
    rebuild = node->view.gpus[i].total_mib != total_mib[i];
  if (rebuild && n > node->ninline) {
    gpus = gs_calloc(n, sizeof *gpus);
    if (gpus == NULL)
      return GS_ENOMEM;
  }
  if (topo != NULL) {
    err = topo_acquire(ledger, topo, &ref);
    if (err != GS_EOK)
      goto free_gpus;
  }
  /* Nothing can fail from here on. */
  if (rebuild) {
    if (gpus == NULL && n > 0)
      gpus = node->inline_gpus; /* fits the record's own array */
    if (node->view.gpus != node->inline_gpus)
      gs_free(node->view.gpus);
    node->view.gpus = gpus;
    node->view.ngpus = n;
    gpus_init(gpus, n, total_mib, node->view.unhealthy_mask);
    for (size_t i = 0; i < node->nallocs; i++)
      account(node, node->allocs[i], true);
  }
  node->view.mode = spec->mode;
  node->view.placement = spec->placement;
  node->view.single_card = spec->single_card;
  topo_release(ledger, node->topo);
  node->topo = ref;
  node->view.topo = ref ? &ref->topo : NULL;
  node->view.topo_choice = ref && ref->has_choice ? ref->choice : NULL;
  node->view.topo_set_score = ref && ref->has_choice ? ref->set_score : NULL;
  gs__ledger_log_touch(&ledger->log, &node->view);
  return GS_EOK;

free_gpus:
  gs_free(gpus);
  return err;
}

static enum gs_err node_insert(struct gs_ledger *ledger, size_t pos,
                               const struct gs_node_spec *spec, uint32_t n,
                               const uint64_t *total_mib, const struct gs_topo *topo) {
  struct node_rec *node;
  enum gs_err err = GS_ENOMEM;
  size_t name_len, gpus_off;
  if (grow((void **)&ledger->nodes, &ledger->cap_nodes, ledger->nnodes + 1,
           sizeof *ledger->nodes) != GS_EOK ||
      gs_strmap_reserve(ledger->by_name, 1) != GS_EOK)
    return GS_ENOMEM;
  name_len = strlen(spec->name) + 1;
  gpus_off = (sizeof *node + name_len + _Alignof(struct gs_gpu) - 1) /
             _Alignof(struct gs_gpu) * _Alignof(struct gs_gpu);
  node = gs_calloc(1, gpus_off + (size_t)n * sizeof(struct gs_gpu));
  if (node == NULL)
    return GS_ENOMEM;
  node->view.name = memcpy((char *)node + sizeof *node, spec->name, name_len);
  if (n > 0) {
    node->inline_gpus = (struct gs_gpu *)(void *)((char *)node + gpus_off);
    node->ninline = n;
    node->view.gpus = node->inline_gpus;
  }
  if (topo != NULL) {
    err = topo_acquire(ledger, topo, &node->topo);
    if (err != GS_EOK)
      goto free_node;
    node->view.topo = &node->topo->topo;
    node->view.topo_choice = node->topo->has_choice ? node->topo->choice : NULL;
    node->view.topo_set_score = node->topo->has_choice ? node->topo->set_score : NULL;
  }
  node->view.mode = spec->mode;
  node->view.placement = spec->placement;
  node->view.single_card = spec->single_card;
  node->view.ngpus = n;
  gpus_init(node->view.gpus, n, total_mib, 0);
  /* Room was reserved and the name is new: put cannot fail. */
  err = gs_strmap_put(ledger->by_name, node->view.name, node);
  assert(err == GS_EOK);
  memmove(&ledger->nodes[pos + 1], &ledger->nodes[pos],
          (ledger->nnodes - pos) * sizeof *ledger->nodes);
  ledger->nodes[pos] = node;
  ledger->nnodes++;
  gs__ledger_log_barrier(&ledger->log);
  return GS_EOK;

free_node:
  node_free(ledger, node);
  return err;
}

enum gs_err gs_ledger_node_upsert(struct gs_ledger *ledger, const struct gs_node_spec *spec) {
  uint64_t total_mib[GS_MAX_GPUS];
  const struct gs_topo *topo = NULL;
  uint32_t n;
  size_t pos;
  enum gs_err err;
  if (spec == NULL || spec->name[0] == '\0')
    return GS_EINVAL;
  if (!str_fits(spec->name, GS_NAME_MAX))
    return GS_ETOOBIG;
  err = spec_gpus(ledger, spec, &n, total_mib);
  if (err != GS_EOK)
    return err;
  if (spec->has_topo && spec->topo != NULL) {
    if (spec->topo->n > GS_MAX_GPUS)
      return GS_ERANGE;
    topo = spec->topo;
  }
  pos = node_search(ledger, spec->name);
  if (pos < ledger->nnodes && strcmp(ledger->nodes[pos]->view.name, spec->name) == 0)
    return node_update(ledger, ledger->nodes[pos], spec, n, total_mib, topo);
  return node_insert(ledger, pos, spec, n, total_mib, topo);
}

enum gs_err gs_ledger_node_remove(struct gs_ledger *ledger, const char *name) {
  size_t pos;
  if (name == NULL)
    return GS_EINVAL;
  pos = node_search(ledger, name);
  if (pos >= ledger->nnodes || strcmp(ledger->nodes[pos]->view.name, name) != 0)
    return GS_ENOTFOUND;
  gs_strmap_del(ledger->by_name, name);
  node_free(ledger, ledger->nodes[pos]);
  memmove(&ledger->nodes[pos], &ledger->nodes[pos + 1],
          (ledger->nnodes - pos - 1) * sizeof *ledger->nodes);
  ledger->nnodes--;
  gs__ledger_log_barrier(&ledger->log);
  return GS_EOK;
}

enum gs_err gs_ledger_node_set_unhealthy(struct gs_ledger *ledger, const char *name,
                                         uint64_t mask) {
  struct node_rec *node = node_find(ledger, name);
  if (node == NULL)
    return GS_ENOTFOUND;
  /* Bits past ngpus are kept: they apply if the node grows. */
  node->view.unhealthy_mask = mask;
  for (uint32_t i = 0; i < node->view.ngpus; i++)
    node->view.gpus[i].healthy = !(mask >> i & 1);
  gs__ledger_log_touch(&ledger->log, &node->view);
  return GS_EOK;
}

enum gs_err gs_ledger_node_set_host(struct gs_ledger *ledger, const char *name,
                                    const struct gs_host *host) {
  struct node_rec *node = node_find(ledger, name);
  if (host == NULL)
    return GS_EINVAL;
  if (node == NULL)
    return GS_ENOTFOUND;
  node->view.host = *host;
  gs__ledger_log_touch(&ledger->log, &node->view);
  return GS_EOK;
}

const struct gs_node *gs_ledger_node_get(const struct gs_ledger *ledger, const char *name) {
  struct node_rec *node = node_find(ledger, name);
  return node ? &node->view : NULL;
}

void gs_ledger_nodes_get(const struct gs_ledger *ledger, const char *const *names, size_t n,
                         const struct gs_node **ret) {
  enum { CHUNK = 16 };
  uint64_t hash[CHUNK];
  size_t len[CHUNK];
  for (size_t base = 0; base < n; base += CHUNK) {
    size_t m = n - base < CHUNK ? n - base : CHUNK;
    for (size_t j = 0; j < m; j++) {
      const char *name = names[base + j];
      hash[j] = name != NULL ? gs_strmap_hash(name, &len[j]) : 0;
      gs_strmap_prefetch(ledger->by_name, hash[j]);
#if defined(__GNUC__)
      /* The next chunk's names: hashing reads each name first, a miss. */
      if (base + CHUNK + j < n)
        __builtin_prefetch(names[base + CHUNK + j]);
#endif
    }
    /* The names the lookups compare, and the records placement reads
     * first (mode, ngpus, the GPU array's address). */
    for (size_t j = 0; j < m; j++)
      gs_strmap_prefetch_entry(ledger->by_name, hash[j]);
    for (size_t j = 0; j < m; j++) {
      const char *name = names[base + j];
      struct node_rec *node =
          name != NULL ? gs_strmap_get_hashed(ledger->by_name, name, len[j], hash[j]) : NULL;
      ret[base + j] = node ? &node->view : NULL;
    }
  }
}

size_t gs_ledger_node_count(const struct gs_ledger *ledger) { return ledger->nnodes; }

const struct gs_node *gs_ledger_node_at(const struct gs_ledger *ledger, size_t i) {
  return i < ledger->nnodes ? &ledger->nodes[i]->view : NULL;
}

size_t gs_ledger_node_orphans(const struct gs_ledger *ledger, const char *name) {
  const struct node_rec *node = node_find(ledger, name);
  size_t orphans = 0;
  if (node == NULL)
    return 0;
  for (size_t i = 0; i < node->nallocs; i++) {
    const struct gs_alloc *a = &node->allocs[i]->view;
    for (uint32_t p = 0; p < a->nparts; p++) {
      if (a->parts[p].gpu >= node->view.ngpus) {
        orphans++;
        break;
      }
    }
  }
  return orphans;
}

/* ---- allocations ---------------------------------------------------------- */

/* Shape checks shared by reserve and restore: nothing here depends on the
 * node, so a malformed allocation is refused before any lookup. */
static enum gs_err alloc_check_shape(const struct gs_alloc *a) {
  if (a == NULL || a->ns == NULL || a->name == NULL || a->uid == NULL || a->node == NULL)
    return GS_EINVAL;
  if (a->ns[0] == '\0' || a->name[0] == '\0' || a->uid[0] == '\0' || a->node[0] == '\0')
    return GS_EINVAL;
  if (!str_fits(a->ns, GS_NS_MAX) || !str_fits(a->name, GS_NAME_MAX) ||
      !str_fits(a->uid, GS_UID_MAX) || !str_fits(a->node, GS_NAME_MAX))
    return GS_ETOOBIG;
  if (a->kind == GS_ALLOC_CLAIM ? a->unit_mib != GS_CLAIM_UNIT_MIB
                                : a->unit_mib != GS_UNIT_GIB && a->unit_mib != GS_UNIT_128MIB)
    return GS_EINVAL;
  if ((a->kind != GS_ALLOC_MEM && a->kind != GS_ALLOC_WHOLE && a->kind != GS_ALLOC_CLAIM) ||
      (a->state != GS_ALLOC_ASSUMED && a->state != GS_ALLOC_BOUND))
    return GS_EINVAL;
  if (a->nparts == 0 || a->parts == NULL)
    return GS_EINVAL;
  if (a->nparts > GS_MAX_PARTS)
    return GS_ETOOBIG;
  for (uint32_t i = 0; i < a->nparts; i++)
    if (a->parts[i].units > GS__PART_MIB_MAX / a->unit_mib &&
        !(a->kind == GS_ALLOC_CLAIM && a->parts[i].units == GS_CLAIM_WHOLE))
      return GS_ERANGE;
  return GS_EOK;
}

/* Does a fit on node now? Nothing is changed. */
static enum gs_err alloc_check_fit(const struct node_rec *node, const struct gs_alloc *a,
                                   uint32_t cgpu_max_pods) {
  uint64_t need_mib[GS_MAX_GPUS] = {0};
  uint64_t mask = 0, whole = 0;
  const struct gs_gpu *gpus = node->view.gpus;
  for (uint32_t i = 0; i < a->nparts; i++) {
    uint32_t g = a->parts[i].gpu;
    bool w = a->kind == GS_ALLOC_WHOLE ||
             (a->kind == GS_ALLOC_CLAIM && a->parts[i].units == GS_CLAIM_WHOLE);
    /* A missing GPU means the node shrank since the pick. */
    if (g >= node->view.ngpus)
      return GS_ENOFIT;
    if ((mask >> g & 1) && (w || (whole >> g & 1)))
      return GS_EINVAL; /* one whole GPU given twice */
    mask |= UINT64_C(1) << g;
    whole |= (uint64_t)w << g;
    if (!w && charges_mem(a))
      need_mib[g] += part_mib(a, &a->parts[i]);
  }
  for (uint32_t g = 0; g < node->view.ngpus; g++) {
    if (!(mask >> g & 1))
      continue;
    if (!gpus[g].healthy || gpus[g].owner != NULL)
      return GS_ENOFIT;
    if (whole >> g & 1) {
      if (gpus[g].npods != 0 || gpus[g].used_mib != 0)
        return GS_ENOFIT;
      continue;
    }
    if (gpus[g].used_mib > gpus[g].total_mib ||
        need_mib[g] > gpus[g].total_mib - gpus[g].used_mib)
      return GS_ENOFIT;
    /* The cgpu cap counts pods, not parts: a 2-container pod is one. */
    if (node->view.mode == GS_MODE_CGPU && cgpu_max_pods != 0 &&
        gpus[g].npods >= cgpu_max_pods)
      return GS_ENOFIT;
  }
  return GS_EOK;
}

static char *copy_str(char **dst, const char *src) {
  size_t len = strlen(src) + 1;
  char *out = memcpy(*dst, src, len);
  *dst += len;
  return out;
}

/* A record of a (already checked), not yet linked, with room for it in the
 * node's list; NULL when memory ran out. */
static struct alloc_rec *alloc_make(struct node_rec *node, const struct gs_alloc *a) {
  size_t parts_size = (size_t)a->nparts * sizeof(struct gs_alloc_part);
  size_t strs = strlen(a->ns) + strlen(a->name) + strlen(a->uid) + strlen(a->node) + 4;
  struct alloc_rec *rec;
  char *p;
  if (grow((void **)&node->allocs, &node->cap_allocs, node->nallocs + 1,
           sizeof *node->allocs) != GS_EOK)
    return NULL;
  rec = gs_malloc(sizeof *rec + parts_size + strs);
  if (rec == NULL)
    return NULL;
  memcpy(rec->parts, a->parts, parts_size);
  p = (char *)rec->parts + parts_size;
  rec->view = *a;
  rec->view.ns = copy_str(&p, a->ns);
  rec->view.name = copy_str(&p, a->name);
  rec->view.uid = copy_str(&p, a->uid);
  rec->view.node = copy_str(&p, a->node);
  rec->view.parts = rec->parts;
  rec->node = node;
  return rec;
}

/* Links and charges rec (room in the node's list already made). */
static enum gs_err alloc_link(struct gs_ledger *ledger, struct node_rec *node,
                              struct alloc_rec *rec) {
  enum gs_err err = gs_strmap_put(ledger->allocs, rec->view.uid, rec);
  if (err != GS_EOK)
    return err;
  rec->slot = node->nallocs;
  node->allocs[node->nallocs++] = rec;
  account(node, rec, true);
  gs__ledger_log_touch(&ledger->log, &node->view);
  return GS_EOK;
}

/* Records a (already checked) and charges it. On error nothing changed. */
static enum gs_err alloc_insert(struct gs_ledger *ledger, struct node_rec *node,
                                const struct gs_alloc *a) {
  struct alloc_rec *rec = alloc_make(node, a);
  enum gs_err err;
  if (rec == NULL)
    return GS_ENOMEM;
  err = alloc_link(ledger, node, rec);
  if (err != GS_EOK)
    gs_free(rec);
  return err;
}

/* The node a new allocation a goes on: its shape checked, GS_EEXISTS when
 * its UID is recorded, GS_ENOTFOUND when its node is unknown. */
static enum gs_err alloc_target(struct gs_ledger *ledger, const struct gs_alloc *a,
                                struct node_rec **ret_node) {
  struct node_rec *node;
  enum gs_err err = alloc_check_shape(a);
  if (err != GS_EOK)
    return err;
  if (gs_strmap_get(ledger->allocs, a->uid) != NULL)
    return GS_EEXISTS;
  node = node_find(ledger, a->node);
  if (node == NULL)
    return GS_ENOTFOUND;
  *ret_node = node;
  return GS_EOK;
}

enum gs_err gs_ledger_reserve(struct gs_ledger *ledger, const struct gs_alloc *alloc,
                              uint32_t cgpu_max_pods) {
  struct node_rec *node;
  enum gs_err err = alloc_target(ledger, alloc, &node);
  if (err == GS_EOK)
    err = alloc_check_fit(node, alloc, cgpu_max_pods);
  return err != GS_EOK ? err : alloc_insert(ledger, node, alloc);
}

/* The unit of a memory allocation that does not record one: the unit in
 * which the pod's own figure for its GPU's capacity (dev_units) is this
 * node's capacity of that GPU; else the larger reading (1 GiB). */
static uint32_t infer_unit(const struct node_rec *node, const struct gs_alloc *a) {
  const struct gs_gpu *gpus = node->view.gpus;
  uint32_t g = a->nparts > 0 && a->parts != NULL ? a->parts[0].gpu : UINT32_MAX;
  uint64_t total;
  if (a->kind != GS_ALLOC_MEM || a->dev_units == 0 || g >= node->view.ngpus)
    return GS_UNIT_GIB;
  total = gpus[g].total_mib;
  if (a->dev_units <= UINT64_MAX / GS_UNIT_GIB && a->dev_units * GS_UNIT_GIB == total)
    return GS_UNIT_GIB;
  if (a->dev_units <= UINT64_MAX / GS_UNIT_128MIB && a->dev_units * GS_UNIT_128MIB == total)
    return GS_UNIT_128MIB;
  return GS_UNIT_GIB;
}

enum gs_err gs_ledger_restore(struct gs_ledger *ledger, const struct gs_alloc *alloc) {
  struct node_rec *node;
  struct gs_alloc resolved;
  enum gs_err err;

  if (alloc != NULL && alloc->unit_mib == 0) {
    node = alloc->node != NULL ? node_find(ledger, alloc->node) : NULL;
    if (node == NULL)
      return alloc->node == NULL ? GS_EINVAL : GS_ENOTFOUND;
    resolved = *alloc;
    resolved.unit_mib = infer_unit(node, alloc);
    alloc = &resolved;
  }
  err = alloc_target(ledger, alloc, &node);
  return err != GS_EOK ? err : alloc_insert(ledger, node, alloc);
}

static void alloc_unlink(struct gs_ledger *ledger, struct node_rec *node, struct alloc_rec *rec);

enum gs_err gs_ledger_release(struct gs_ledger *ledger, const char *uid) {
  struct alloc_rec *rec;
  struct node_rec *node;
  if (uid == NULL)
    return GS_EINVAL;
  rec = gs_strmap_del(ledger->allocs, uid);
  if (rec == NULL)
    return GS_ENOTFOUND;
  node = rec->node;
  alloc_unlink(ledger, node, rec);
  gs_free(rec);
  return GS_EOK;
}

/* Discharges rec (already out of the UID map) and takes it off its node. */
static void alloc_unlink(struct gs_ledger *ledger, struct node_rec *node, struct alloc_rec *rec) {
  struct alloc_rec *last;
  account(node, rec, false);
  gs__ledger_log_touch(&ledger->log, &node->view);
  last = node->allocs[--node->nallocs];
  node->allocs[rec->slot] = last;
  last->slot = rec->slot;
}

enum gs_err gs_ledger_confirm(struct gs_ledger *ledger, const char *uid) {
  struct alloc_rec *rec;
  if (uid == NULL)
    return GS_EINVAL;
  rec = gs_strmap_get(ledger->allocs, uid);
  if (rec == NULL)
    return GS_ENOTFOUND;
  rec->view.state = GS_ALLOC_BOUND;
  return GS_EOK;
}

const struct gs_alloc *gs_ledger_alloc_get(const struct gs_ledger *ledger, const char *uid) {
  struct alloc_rec *rec = uid ? gs_strmap_get(ledger->allocs, uid) : NULL;
  return rec ? &rec->view : NULL;
}

size_t gs_ledger_node_alloc_count(const struct gs_ledger *ledger, const char *node) {
  const struct node_rec *rec = node_find(ledger, node);
  return rec ? rec->nallocs : 0;
}

const struct gs_alloc *gs_ledger_node_alloc_at(const struct gs_ledger *ledger,
                                               const char *node, size_t i) {
  const struct node_rec *rec = node_find(ledger, node);
  return rec && i < rec->nallocs ? &rec->allocs[i]->view : NULL;
}

size_t gs_ledger_alloc_count(const struct gs_ledger *ledger) {
  return gs_strmap_count(ledger->allocs);
}

uint64_t gs_ledger_gen(const struct gs_ledger *ledger) { return ledger->log.gen; }

size_t gs_ledger_changed_since(const struct gs_ledger *ledger, uint64_t gen,
                               const struct gs_node **ret, size_t max) {
  return gs__ledger_log_since(&ledger->log, gen, ret, max);
}

uint64_t gs_alloc_part_mib(const struct gs_alloc *alloc, const struct gs_alloc_part *part) {
  return part_mib(alloc, part);
}

/* ---- DRA claims ------------------------------------------------------------ */

uint64_t gs_ledger_part_charge_mib(const struct gs_gpu *gpu, const struct gs_alloc *alloc,
                                   const struct gs_alloc_part *part) {
  return charge_mib(gpu, alloc, part);
}

enum gs_err gs_ledger_claim_set(struct gs_ledger *ledger, const struct gs_alloc *claim) {
  struct alloc_rec *old, *rec;
  struct node_rec *node;
  enum gs_err err = alloc_check_shape(claim);
  if (err != GS_EOK)
    return err;
  if (claim->kind != GS_ALLOC_CLAIM)
    return GS_EINVAL;
  old = gs_strmap_get(ledger->allocs, claim->uid);
  if (old != NULL && old->view.kind != GS_ALLOC_CLAIM)
    return GS_EEXISTS;
  node = node_find(ledger, claim->node);
  if (node == NULL)
    return GS_ENOTFOUND;
  /* Everything that can fail first; then the old charge goes and the new
   * one comes with no failure path in between. */
  rec = alloc_make(node, claim);
  if (rec == NULL || gs_strmap_reserve(ledger->allocs, 1) != GS_EOK) {
    gs_free(rec);
    return GS_ENOMEM;
  }
  if (old != NULL) {
    gs_strmap_del(ledger->allocs, old->view.uid);
    alloc_unlink(ledger, old->node, old);
    gs_free(old);
  }
  err = alloc_link(ledger, node, rec); /* room reserved: cannot fail */
  assert(err == GS_EOK);
  return err;
}

enum gs_err gs_ledger_claim_fits(const struct gs_ledger *ledger, const struct gs_alloc *claim) {
  const struct node_rec *node;
  enum gs_err err = alloc_check_shape(claim);
  if (err != GS_EOK)
    return err;
  if (claim->kind != GS_ALLOC_CLAIM)
    return GS_EINVAL;
  node = node_find(ledger, claim->node);
  if (node == NULL)
    return GS_ENOTFOUND;
  return alloc_check_fit(node, claim, 0);
}
