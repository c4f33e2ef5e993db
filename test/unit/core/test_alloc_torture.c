/* Allocation-failure torture of the core (issue 7 item 6, curl's idea):
 * for N = 1, 2, 3, ... the Nth allocation of an operation fails, until the
 * operation runs without reaching N allocations. Each failing run must
 * return GS_ENOMEM (never crash), leave the ledger exactly as it was (a
 * dump of every node, GPU and allocation compared before and after) and
 * leak nothing (LeakSanitizer checks at exit in the ASan build). The run
 * that succeeds must give the same ledger as an unhooked run. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "alloc.h"
#include "strmap.h"

#include "../ledger_dump.h"
#include "../testutil.h"

#include <gpushare/annot.h>
#include <gpushare/ledger.h>
#include <gpushare/topo.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixtures ------------------------------------------------------------- */

static struct gs_topo topo2, topo4;

static void topos_init(void) {
  static const char *const t2 = "\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t X \n";
  static const char *const t4 = "\tGPU0\tGPU1\tGPU2\tGPU3\n"
                                "GPU0\t X \tNV1\tSYS\tSYS\n"
                                "GPU1\tNV1\t X \tSYS\tSYS\n"
                                "GPU2\tSYS\tSYS\t X \tNV1\n"
                                "GPU3\tSYS\tSYS\tNV1\t X \n";
  assert_int_equal(gs_topo_parse_text(t2, strlen(t2), &topo2, NULL), GS_EOK);
  assert_int_equal(gs_topo_parse_text(t4, strlen(t4), &topo4, NULL), GS_EOK);
}

static struct gs_node_spec spec_of(const char *name, enum gs_mode mode, uint32_t ngpus,
                                   uint64_t units, const struct gs_topo *topo) {
  struct gs_node_spec s = gs_test_node(name, mode, ngpus, units);
  if (mode == GS_MODE_TOPOLOGY)
    s.whole_gpus = ngpus;
  s.has_topo = topo != NULL;
  s.topo = topo;
  return s;
}

static char uid_buf[64][16];

static struct gs_alloc mem_alloc(const char *uid, const char *node,
                                 const struct gs_alloc_part *parts, uint32_t nparts) {
  return (struct gs_alloc){.ns = "default", .name = uid, .uid = uid, .node = node,
                           .kind = GS_ALLOC_MEM, .state = GS_ALLOC_ASSUMED,
                           .unit_mib = GS_UNIT_GIB, .assume_time_ns = 7, .nparts = nparts,
                           .parts = parts};
}

/* A ledger with a share node (2 × 16 GiB, 3 pods), a topology node (4 GPUs,
 * one whole-GPU pod) and npods more 1 GiB pods on a big share node. */
static struct gs_ledger *fixture(unsigned npods) {
  struct gs_ledger *l = gs_ledger_new(GS_UNIT_GIB);
  struct gs_node_spec s;
  static const struct gs_alloc_part p1[] = {{0, 0, 4}, {1, 1, 2}}, p2[] = {{0, 1, 3}},
                                    p3[] = {{0, 0, 1}}, w1[] = {{0, 2, 0}, {0, 3, 0}};
  struct gs_alloc a;
  assert_non_null(l);
  s = spec_of("share-a", GS_MODE_SHARE, 2, 32, &topo2);
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  s = spec_of("topo-b", GS_MODE_TOPOLOGY, 4, 0, &topo4);
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  s = spec_of("big-c", GS_MODE_CGPU, 8, 8 * 64, NULL);
  assert_int_equal(gs_ledger_node_upsert(l, &s), GS_EOK);
  a = mem_alloc("u-1", "share-a", p1, 2);
  assert_int_equal(gs_ledger_reserve(l, &a, 16), GS_EOK);
  a = mem_alloc("u-2", "share-a", p2, 1);
  assert_int_equal(gs_ledger_reserve(l, &a, 16), GS_EOK);
  a = mem_alloc("u-3", "share-a", p3, 1);
  a.state = GS_ALLOC_BOUND;
  assert_int_equal(gs_ledger_restore(l, &a), GS_EOK);
  a = mem_alloc("w-1", "topo-b", w1, 2);
  a.kind = GS_ALLOC_WHOLE;
  assert_int_equal(gs_ledger_reserve(l, &a, 16), GS_EOK);
  for (unsigned i = 0; i < npods; i++) {
    static const struct gs_alloc_part p = {0, 0, 1};
    struct gs_alloc_part part = p;
    part.gpu = i % 8;
    snprintf(uid_buf[i % 64], sizeof uid_buf[0], "c-%u", i);
    a = mem_alloc(uid_buf[i % 64], "big-c", &part, 1);
    assert_int_equal(gs_ledger_reserve(l, &a, 0), GS_EOK);
  }
  return l;
}

/* ---- the loop ------------------------------------------------------------- */

typedef enum gs_err (*ledger_op)(struct gs_ledger *l);

/* Runs op on a fresh fixture with the Nth allocation failing, for every N
 * until op no longer reaches N; returns the number of failure points. */
static unsigned long torture_ledger(const char *name, unsigned npods, ledger_op op) {
  static struct dump before, after, want;
  struct gs_ledger *l;
  enum gs_err err;
  unsigned long n;

  /* The reference: op without failures. */
  l = fixture(npods);
  assert_int_equal(op(l), GS_EOK);
  dump_ledger(l, &want);
  gs_ledger_free(l);

  for (n = 1;; n++) {
    bool hit;
    l = fixture(npods);
    dump_ledger(l, &before);
    gs_alloc_fail_after(n);
    err = op(l);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    dump_ledger(l, &after);
    if (!hit) {
      assert_int_equal(err, GS_EOK);
      assert_string_equal(after.text, want.text);
      gs_ledger_free(l);
      break;
    }
    if (err != GS_ENOMEM)
      fail_msg("%s: allocation %lu failed, got %s", name, n, gs_err_name(err));
    if (strcmp(before.text, after.text) != 0)
      fail_msg("%s: allocation %lu failed and the ledger changed:\n%s---\n%s", name, n,
               before.text, after.text);
    gs_ledger_free(l);
  }
  printf("# %s: %lu allocation failure points\n", name, n - 1);
  return n - 1;
}

/* ---- operations ----------------------------------------------------------- */

static enum gs_err op_insert_node(struct gs_ledger *l) {
  struct gs_node_spec s = spec_of("new-d", GS_MODE_TOPOLOGY, 2, 0, &topo2);
  return gs_ledger_node_upsert(l, &s);
}

static enum gs_err op_insert_node_new_topo(struct gs_ledger *l) {
  static struct gs_topo t;
  struct gs_node_spec s;
  t = topo2;
  t.nvlinks[1] = t.nvlinks[2] = 4; /* a matrix the ledger has not interned */
  s = spec_of("a-first", GS_MODE_SHARE, 2, 8, &t);
  return gs_ledger_node_upsert(l, &s);
}

static enum gs_err op_update_rebuild(struct gs_ledger *l) {
  static struct gs_topo t;
  struct gs_node_spec s;
  t = topo4;
  t.nvlinks[1] = t.nvlinks[4] = 3;
  /* share-a grows to 4 GPUs with a new matrix: GPUs rebuilt, pods re-charged */
  s = spec_of("share-a", GS_MODE_SHARE, 4, 64, &t);
  return gs_ledger_node_upsert(l, &s);
}

static enum gs_err op_update_shrink(struct gs_ledger *l) {
  struct gs_node_spec s = spec_of("share-a", GS_MODE_MPS, 1, 16, NULL);
  return gs_ledger_node_upsert(l, &s);
}

static enum gs_err op_reserve(struct gs_ledger *l) {
  static const struct gs_alloc_part parts[] = {{0, 0, 2}, {0, 1, 2}, {2, 0, 1}};
  struct gs_alloc a = mem_alloc("new-pod-uid", "share-a", parts, 3);
  return gs_ledger_reserve(l, &a, 16);
}

static enum gs_err op_restore_whole(struct gs_ledger *l) {
  static const struct gs_alloc_part parts[] = {{0, 0, 0}, {1, 1, 0}};
  struct gs_alloc a = mem_alloc("whole-uid", "topo-b", parts, 2);
  a.kind = GS_ALLOC_WHOLE;
  a.state = GS_ALLOC_BOUND;
  return gs_ledger_restore(l, &a);
}

/* One more pod on big-c (see test_reserve_restore for when things grow). */
static enum gs_err op_reserve_grow(struct gs_ledger *l) {
  static const struct gs_alloc_part part = {0, 5, 1};
  struct gs_alloc a = mem_alloc("grow-uid", "big-c", &part, 1);
  return gs_ledger_reserve(l, &a, 0);
}

static enum gs_err op_release(struct gs_ledger *l) {
  enum gs_err err = gs_ledger_release(l, "u-1");
  if (err == GS_EOK)
    err = gs_ledger_release(l, "w-1");
  return err;
}

static enum gs_err op_remove_confirm(struct gs_ledger *l) {
  enum gs_err err = gs_ledger_confirm(l, "u-2");
  if (err == GS_EOK)
    err = gs_ledger_node_set_unhealthy(l, "share-a", 2);
  if (err == GS_EOK)
    err = gs_ledger_node_remove(l, "topo-b");
  return err;
}

static void test_ledger_new(void **state) {
  unsigned long n;
  (void)state;
  for (n = 1;; n++) {
    struct gs_ledger *l;
    bool hit;
    gs_alloc_fail_after(n);
    l = gs_ledger_new(GS_UNIT_128MIB);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    if (!hit) {
      assert_non_null(l);
      gs_ledger_free(l);
      break;
    }
    assert_null(l);
  }
  assert_true(n > 1);
}

static void test_node_upsert(void **state) {
  (void)state;
  /* A node is one block (record, name, GPUs): at least that one point. */
  assert_true(torture_ledger("insert node", 0, op_insert_node) >= 1);
  /* node block, topology copy, the GPU-set table's searches */
  assert_true(torture_ledger("insert node, new topology", 0, op_insert_node_new_topo) >= 2);
  assert_true(torture_ledger("update with rebuild", 0, op_update_rebuild) >= 2);
  (void)torture_ledger("update, shrink", 0, op_update_shrink);
}

static void test_reserve_restore(void **state) {
  (void)state;
  assert_true(torture_ledger("reserve", 0, op_reserve) >= 1);
  assert_true(torture_ledger("restore whole", 0, op_restore_whole) >= 1);
  /* 8 pods on big-c (12 in the ledger): the next one outgrows both the
   * node's pod array (8 → 16) and the UID map (16 slots at 3/4 load → 32) */
  assert_int_equal(torture_ledger("reserve with growth", 8, op_reserve_grow), 3);
}

static void test_release_and_others(void **state) {
  (void)state;
  /* These never allocate: no failure point, and the reference must hold. */
  assert_int_equal(torture_ledger("release", 0, op_release), 0);
  assert_int_equal(torture_ledger("confirm, unhealthy, remove", 0, op_remove_confirm), 0);
}

/* A whole day of churn: reserve and release with failures sprinkled in;
 * the ledger must always equal a shadow built without failures. */
static void test_churn(void **state) {
  static struct dump a, b;
  struct gs_ledger *l = fixture(0), *shadow = fixture(0);
  unsigned failures = 0;
  (void)state;
  for (unsigned i = 0; i < 400; i++) {
    char uid[32];
    struct gs_alloc_part part = {0, i % 8, 1};
    struct gs_alloc al;
    enum gs_err err;
    bool hit;
    snprintf(uid, sizeof uid, "churn-%u", i);
    al = mem_alloc(uid, "big-c", &part, 1);
    gs_alloc_fail_after(1 + i % 3);
    err = gs_ledger_reserve(l, &al, 0);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    if (hit) {
      assert_int_equal(err, GS_ENOMEM);
      failures++;
    } else {
      assert_int_equal(err, GS_EOK);
      assert_int_equal(gs_ledger_reserve(shadow, &al, 0), GS_EOK);
    }
    if (i % 3 == 2) { /* release an older one, if it made it */
      snprintf(uid, sizeof uid, "churn-%u", i - 2);
      assert_int_equal(gs_ledger_release(l, uid), gs_ledger_release(shadow, uid));
    }
    dump_ledger(l, &a);
    dump_ledger(shadow, &b);
    assert_string_equal(a.text, b.text);
  }
  assert_true(failures > 0);
  gs_ledger_free(l);
  gs_ledger_free(shadow);
}

/* ---- strmap, topology chooser, annotations ---------------------------------- */

static void test_strmap(void **state) {
  static char keys[200][16];
  unsigned long n;
  (void)state;
  for (unsigned i = 0; i < 200; i++)
    snprintf(keys[i], sizeof keys[i], "k%u", i);
  for (n = 1;; n++) {
    struct gs_strmap *m;
    bool hit;
    size_t ok = 0;
    enum gs_err err = GS_EOK;
    gs_alloc_fail_after(n);
    m = gs_strmap_new();
    for (unsigned i = 0; m != NULL && i < 200; i++) {
      err = gs_strmap_put(m, keys[i], keys[i]);
      if (err != GS_EOK) {
        assert_int_equal(err, GS_ENOMEM);
        /* the map is intact: every key put so far is there, the failed one not */
        assert_null(gs_strmap_get(m, keys[i]));
        break;
      }
      ok++;
    }
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    if (m != NULL) {
      assert_int_equal(gs_strmap_count(m), ok);
      for (size_t i = 0; i < ok; i++)
        assert_ptr_equal(gs_strmap_get(m, keys[i]), keys[i]);
    }
    gs_strmap_free(m);
    if (!hit) {
      assert_int_equal(ok, 200);
      break;
    }
    assert_true(m == NULL || err == GS_ENOMEM);
  }
  assert_true(n > 4); /* new (2) and several resizes */
}

static void test_topo_choose(void **state) {
  unsigned long n;
  uint64_t want = 0;
  (void)state;
  assert_int_equal(gs_topo_choose(&topo4, 0xF, 2, &want), GS_EOK);
  for (n = 1;; n++) {
    uint64_t set = 0;
    enum gs_err err;
    bool hit;
    gs_alloc_fail_after(n);
    err = gs_topo_choose(&topo4, 0xF, 2, &set);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    if (!hit) {
      assert_int_equal(err, GS_EOK);
      assert_int_equal(set, want);
      break;
    }
    /* a chooser may fall back to a cheaper search rather than fail */
    if (err == GS_EOK)
      assert_int_equal(__builtin_popcountll(set), 2);
    else
      assert_int_equal(err, GS_ENOMEM);
  }
  assert_true(n > 1);
}

static void test_annotations(void **state) {
  static const struct gs_alloc_part parts[] = {{0, 0, 4}, {0, 1, 4}, {1, 1, 2}};
  static const struct gs_alloc_part whole[] = {{0, 2, 0}, {1, 3, 0}};
  struct gs_ledger *l = fixture(0);
  const struct gs_node *node = gs_ledger_node_get(l, "share-a");
  struct gs_alloc a = mem_alloc("x", "share-a", parts, 3), w = mem_alloc("y", "topo-b", whole, 2);
  unsigned long n;
  (void)state;
  w.kind = GS_ALLOC_WHOLE;
  for (n = 1;; n++) {
    struct gs_annotations ann = {0};
    enum gs_err e1, e2;
    bool hit;
    gs_alloc_fail_after(n);
    e1 = gs_annotations_set(&ann, "keep", "me");
    e2 = e1 == GS_EOK ? gs_annot_mem(&a, node, &ann) : e1;
    if (e2 == GS_EOK)
      e2 = gs_annot_whole(&w, &ann);
    hit = gs_alloc_fail_hit();
    gs_alloc_fail_after(0);
    if (!hit) {
      assert_int_equal(e2, GS_EOK);
      assert_string_equal(gs_annotations_get(&ann, "keep"), "me");
      assert_non_null(gs_annotations_get(&ann, GS_ANN_ALLOCATION));
      assert_non_null(gs_annotations_get(&ann, GS_ANN_TOPO_ALLOCATION));
      gs_annotations_clear(&ann);
      break;
    }
    assert_int_equal(e2, GS_ENOMEM);
    /* whatever was written is well-formed and freed by clear */
    for (size_t i = 0; i < ann.n; i++)
      assert_non_null(ann.kv[i].value);
    gs_annotations_clear(&ann);
  }
  assert_true(n > 10);
  gs_ledger_free(l);
}

static int setup(void **state) {
  (void)state;
  topos_init();
  return 0;
}

GS_TEST_MAIN(setup, NULL, cmocka_unit_test(test_ledger_new), cmocka_unit_test(test_node_upsert),
             cmocka_unit_test(test_reserve_restore), cmocka_unit_test(test_release_and_others),
             cmocka_unit_test(test_churn), cmocka_unit_test(test_strmap),
             cmocka_unit_test(test_topo_choose), cmocka_unit_test(test_annotations))
