/* The framework from many threads at once (docs/contract.md §2: binds arrive
 * concurrently with filters for other pods). Written for ThreadSanitizer
 * (tools/dev.sh test runs framework_* under TSan): filter, prioritize,
 * bind prepare/commit/abort, pods leaving, node updates, expiry and reads
 * interleave; afterwards no GPU is over-committed and every GPU's charge
 * equals the sum of the allocations left on it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "framework.h"
#include "plugins.h"
#include "fw_test.h"
#include "../testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define NODES 4
#define GPUS 4
#define UNITS_PER_GPU 16
#define BINDERS 4
#define ROUNDS 600

static const char *const node_names[NODES] = {"gpu-0", "gpu-1", "gpu-2", "gpu-3"};
static atomic_uint bound, refused, failures;
static atomic_bool stop;

/* cmocka's asserts longjmp: not from other threads. Count, check at the end. */
#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
      atomic_fetch_add(&failures, 1);                                            \
    }                                                                            \
  } while (0)

static struct gs_node_spec spec_of(const char *name) {
  return gs_test_node(name, GS_MODE_SHARE, GPUS, GPUS * UNITS_PER_GPU);
}

static struct gs_pod_request pod_of(unsigned thread, unsigned round) {
  char name[32], uid[32];
  struct gs_pod_request p;
  snprintf(name, sizeof name, "p-%u-%u", thread, round);
  snprintf(uid, sizeof uid, "uid-%u-%u", thread, round);
  p = gs_test_pod(name, uid);
  p.mem_units[0] = 1 + (thread + round) % 5;
  p.gpu_count = round % 7 == 0 ? 2 : 1;
  if (p.gpu_count == 2 && p.mem_units[0] % 2 != 0)
    p.mem_units[0]++;
  return p;
}

/* kube-scheduler for one pod: filter, prioritize, bind the best node; the
 * apiserver accepts most binds, refuses some (abort), and older pods leave. */
static void *binder(void *arg) {
  struct gs_sched *fw = arg;
  static atomic_uint next_id;
  unsigned id = atomic_fetch_add(&next_id, 1);
  for (unsigned r = 0; r < ROUNDS; r++) {
    struct gs_pod_request p = pod_of(id, r);
    struct gs_node_result res[NODES];
    int best = -1;
    CHECK(gs_sched_filter(fw, &p, node_names, NODES, 1000, res) == GS_EOK);
    CHECK(gs_sched_prioritize(fw, &p, node_names, NODES, 1000, res) == GS_EOK);
    for (int i = 0; i < NODES; i++)
      if (res[i].code == GS_EOK && (best < 0 || res[i].score > res[best].score))
        best = i;
    if (best >= 0) {
      struct gs_annotations a = {0};
      struct gs_status st;
      bool fresh = false;
      /* another thread may have taken the room since filter: a refusal is fine */
      if (gs_fw_reserve(fw, &p, node_names[best], 1000, &a, &fresh, &st) == GS_EOK) {
        if (r % 5 == 4) {
          gs_sched_unreserve(fw, &p, node_names[best]);
        } else {
          gs_sched_post_bind(fw, p.uid);
          atomic_fetch_add(&bound, 1);
        }
      } else {
        atomic_fetch_add(&refused, 1);
      }
      gs_annotations_clear(&a);
    }
    if (r >= 6) { /* an older pod of this thread leaves */
      struct gs_pod_request old = pod_of(id, r - 6);
      gs_fw_pod_gone(fw, old.uid);
    }
  }
  return NULL;
}

struct check {
  unsigned overcommitted, mismatched;
};

static void check_fn(const struct gs_ledger *l, void *arg) {
  struct check *c = arg;
  for (size_t i = 0; i < gs_ledger_node_count(l); i++) {
    const struct gs_node *n = gs_ledger_node_at(l, i);
    uint64_t sum[GS_MAX_GPUS] = {0};
    for (size_t k = 0; k < gs_ledger_node_alloc_count(l, n->name); k++) {
      const struct gs_alloc *a = gs_ledger_node_alloc_at(l, n->name, k);
      for (uint32_t p = 0; p < a->nparts; p++)
        if (a->parts[p].gpu < n->ngpus)
          sum[a->parts[p].gpu] += gs_alloc_part_mib(a, &a->parts[p]);
    }
    for (uint32_t g = 0; g < n->ngpus; g++) {
      c->overcommitted += n->gpus[g].used_mib > n->gpus[g].total_mib;
      c->mismatched += n->gpus[g].used_mib != sum[g];
    }
  }
}

/* Cluster events and readers while the binders run. */
static void *housekeeper(void *arg) {
  struct gs_sched *fw = arg;
  unsigned i = 0;
  while (!atomic_load(&stop)) {
    struct gs_node_spec s = spec_of(node_names[i % NODES]);
    struct check c = {0, 0};
    CHECK(gs_fw_node_upsert(fw, &s) == GS_EOK);
    CHECK(gs_fw_node_set_unhealthy(fw, node_names[(i + 1) % NODES], i % 4 == 0 ? 1u : 0u) ==
          GS_EOK);
    (void)gs_sched_expire_assumed(fw, 1000, INT64_C(1) << 40); /* nothing is that old */
    gs_sched_tick(fw, 1000);
    gs_sched_read(fw, check_fn, NULL, &c);
    CHECK(c.overcommitted == 0);
    CHECK(c.mismatched == 0);
    i++;
  }
  return NULL;
}

static void test_filters_and_binds_in_parallel(void **state) {
  struct gs_policy policy;
  struct gs_sched *fw;
  pthread_t th[BINDERS], hk;
  struct check c = {0, 0};
  (void)state;
  gs_policy_init(&policy);
  fw = fw_test_new(&policy);
  for (int i = 0; i < NODES; i++) {
    struct gs_node_spec s = spec_of(node_names[i]);
    assert_int_equal(gs_fw_node_upsert(fw, &s), GS_EOK);
  }
  assert_int_equal(pthread_create(&hk, NULL, housekeeper, fw), 0);
  for (int i = 0; i < BINDERS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, binder, fw), 0);
  for (int i = 0; i < BINDERS; i++)
    assert_int_equal(pthread_join(th[i], NULL), 0);
  atomic_store(&stop, true);
  assert_int_equal(pthread_join(hk, NULL), 0);

  assert_int_equal(atomic_load(&failures), 0);
  gs_sched_read(fw, check_fn, NULL, &c);
  assert_int_equal(c.overcommitted, 0);
  assert_int_equal(c.mismatched, 0);
  assert_true(atomic_load(&bound) > 0);
  printf("# %u bound, %u refused at bind\n", atomic_load(&bound), atomic_load(&refused));
  gs_sched_free(fw);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_filters_and_binds_in_parallel))
