/* Binding annotations (docs/contract.md §4), written with util's one JSON
 * writer (jw.h) into a bounded buffer: every key and value is a decimal
 * number or a fixed word. */
#include <gpushare/annot.h>

#include "jw.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define ANNOT_VALUE_MAX 8192 /* one annotation value; 256 parts need ~5 KiB */

/* Distinct GPUs of alloc as a mask. */
static uint64_t gpu_mask(const struct gs_alloc *a) {
  uint64_t m = 0;
  for (uint32_t i = 0; i < a->nparts; i++)
    if (a->parts[i].gpu < GS_MAX_GPUS)
      m |= UINT64_C(1) << a->parts[i].gpu;
  return m;
}

/* Distinct containers of alloc as a sorted list; returns the count. */
static uint32_t containers(const struct gs_alloc *a, uint32_t *out, uint32_t cap) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < a->nparts; i++) {
    uint32_t c = a->parts[i].container, j;
    for (j = 0; j < n && out[j] != c; j++)
      ;
    if (j < n || n == cap)
      continue;
    for (j = n; j > 0 && out[j - 1] > c; j--)
      out[j] = out[j - 1];
    out[j] = c;
    n++;
  }
  return n;
}

/* An allocation worth writing: 1..GS_MAX_PARTS parts inside the caps, no
 * (container, GPU) twice, whole GPUs owned once. */
static enum gs_err validate(const struct gs_alloc *a, enum gs_alloc_kind kind) {
  uint64_t whole = 0;
  if (a == NULL || a->kind != kind || a->nparts == 0 || a->nparts > GS_MAX_PARTS ||
      a->parts == NULL)
    return GS_EINVAL;
  for (uint32_t i = 0; i < a->nparts; i++) {
    const struct gs_alloc_part *p = &a->parts[i];
    if (p->container >= GS_MAX_CONTAINERS || p->gpu >= GS_MAX_GPUS ||
        p->units > (UINT64_C(1) << 53))
      return GS_EINVAL;
    if (kind == GS_ALLOC_WHOLE) {
      if (whole & (UINT64_C(1) << p->gpu))
        return GS_EINVAL;
      whole |= UINT64_C(1) << p->gpu;
    }
    for (uint32_t j = 0; j < i; j++)
      if (a->parts[j].container == p->container && a->parts[j].gpu == p->gpu)
        return GS_EINVAL;
  }
  return GS_EOK;
}

/* Sets key to what b holds and empties b for the next value. */
static enum gs_err put(struct gs_annotations *ret, const char *key, struct gs_buf *b) {
  enum gs_err err = b->failed != GS_EOK ? b->failed
                    : b->p == NULL      ? gs_annotations_set(ret, key, "")
                                        : gs_annotations_set(ret, key, b->p);
  gs_buf_release(b);
  *b = (struct gs_buf){.max = ANNOT_VALUE_MAX};
  return err;
}

/* Copies every key of stage onto ret when all of them fit, so a full set
 * never leaves ret half-written (only an allocation failure can). */
static enum gs_err merge(struct gs_annotations *ret, struct gs_annotations *stage,
                         enum gs_err err) {
  size_t fresh = 0;
  for (size_t i = 0; err == GS_EOK && i < stage->n; i++)
    if (gs_annotations_get(ret, stage->kv[i].key) == NULL)
      fresh++;
  if (err == GS_EOK && ret->n + fresh > GS_ANNOT_MAX)
    err = GS_ETOOBIG;
  for (size_t i = 0; err == GS_EOK && i < stage->n; i++)
    err = gs_annotations_set(ret, stage->kv[i].key, stage->kv[i].value);
  gs_annotations_clear(stage);
  return err;
}

static enum gs_err mem_values(const struct gs_alloc *alloc, const struct gs_node *node,
                              struct gs_annotations *ret) {
  struct gs_buf b = {.max = ANNOT_VALUE_MAX};
  uint32_t conts[GS_MAX_PARTS], ncont, unit;
  uint64_t mask, total = 0;
  char num[32];
  enum gs_err err;
  int first_gpu = -1;

  if (node == NULL || ret == NULL || (err = validate(alloc, GS_ALLOC_MEM)) != GS_EOK)
    return GS_EINVAL;
  unit = alloc->unit_mib;
  if (unit != GS_UNIT_GIB && unit != GS_UNIT_128MIB)
    return GS_EINVAL;
  mask = gpu_mask(alloc);
  for (uint32_t g = 0; g < GS_MAX_GPUS; g++) {
    if (mask & (UINT64_C(1) << g)) {
      if (g >= node->ngpus)
        return GS_EINVAL; /* the allocation names a GPU the node lacks */
      if (first_gpu < 0)
        first_gpu = (int)g;
    }
  }
  ncont = containers(alloc, conts, GS_MAX_PARTS);

  /* V2 allocation: containers ascending, GPUs ascending within each. */
  gs_jw_lit(&b, "{");
  for (uint32_t ci = 0; ci < ncont; ci++) {
    bool first = true;
    if (ci)
      gs_jw_lit(&b, ",");
    gs_jw_key_uint(&b, conts[ci]);
    gs_jw_lit(&b, "{");
    for (uint32_t g = 0; g < GS_MAX_GPUS; g++) {
      uint64_t units = 0;
      bool found = false;
      for (uint32_t i = 0; i < alloc->nparts; i++) {
        if (alloc->parts[i].container == conts[ci] && alloc->parts[i].gpu == g) {
          units += alloc->parts[i].units;
          found = true;
        }
      }
      if (!found)
        continue;
      if (!first)
        gs_jw_lit(&b, ",");
      gs_jw_key_uint(&b, g);
      gs_jw_uint(&b, units);
      first = false;
    }
    gs_jw_lit(&b, "}");
  }
  gs_jw_lit(&b, "}");
  if ((err = put(ret, GS_ANN_ALLOCATION, &b)) != GS_EOK)
    return err;
  if ((err = gs_annotations_set(ret, GS_ANN_ASSIGNED, "false")) != GS_EOK)
    return err;
  snprintf(num, sizeof num, "%" PRId64, alloc->assume_time_ns);
  if ((err = gs_annotations_set(ret, GS_ANN_ASSUME_TIME, num)) != GS_EOK)
    return err;

  /* Device capacities of every GPU of the node, in the allocation's unit. */
  gs_jw_lit(&b, "{");
  for (uint32_t g = 0; g < node->ngpus; g++) {
    if (g)
      gs_jw_lit(&b, ",");
    gs_jw_key_uint(&b, node->gpus[g].index);
    gs_jw_uint(&b, node->gpus[g].total_mib / unit);
  }
  gs_jw_lit(&b, "}");
  if ((err = put(ret, GS_ANN_DEVICE_RESOURCE, &b)) != GS_EOK)
    return err;

  /* Legacy keys of Aliyun's open-source device plugin (plain text, not JSON). */
  for (uint32_t g = 0; g < GS_MAX_GPUS; g++)
    if (mask & (UINT64_C(1) << g)) {
      if (b.len)
        gs_jw_lit(&b, ",");
      gs_jw_uint(&b, g);
    }
  if ((err = put(ret, GS_ANN_LEGACY_IDX, &b)) != GS_EOK)
    return err;
  for (uint32_t i = 0; i < alloc->nparts; i++)
    total += alloc->parts[i].units;
  snprintf(num, sizeof num, "%" PRIu64, total);
  if ((err = gs_annotations_set(ret, GS_ANN_LEGACY_POD, num)) != GS_EOK)
    return err;
  num[0] = '0';
  num[1] = '\0';
  if (first_gpu >= 0 && (uint32_t)first_gpu < node->ngpus)
    snprintf(num, sizeof num, "%" PRIu64, node->gpus[first_gpu].total_mib / unit);
  if ((err = gs_annotations_set(ret, GS_ANN_LEGACY_DEV, num)) != GS_EOK)
    return err;
  if ((err = gs_annotations_set(ret, GS_ANN_LEGACY_ASSIGNED, "false")) != GS_EOK)
    return err;
  snprintf(num, sizeof num, "%" PRId64, alloc->assume_time_ns);
  if ((err = gs_annotations_set(ret, GS_ANN_LEGACY_ASSUME_TIME, num)) != GS_EOK)
    return err;
  snprintf(num, sizeof num, "%" PRIu32, unit);
  return gs_annotations_set(ret, GS_ANN_UNIT_MIB, num);
}

enum gs_err gs_annot_mem(const struct gs_alloc *alloc, const struct gs_node *node,
                         struct gs_annotations *ret) {
  struct gs_annotations stage = {0};
  if (ret == NULL)
    return GS_EINVAL;
  return merge(ret, &stage, mem_values(alloc, node, &stage));
}

static enum gs_err whole_values(const struct gs_alloc *alloc, struct gs_annotations *ret) {
  struct gs_buf b = {.max = ANNOT_VALUE_MAX};
  uint32_t conts[GS_MAX_PARTS], ncont;
  uint64_t mask;
  bool first = true;
  enum gs_err err;

  if (ret == NULL || validate(alloc, GS_ALLOC_WHOLE) != GS_EOK)
    return GS_EINVAL;
  ncont = containers(alloc, conts, GS_MAX_PARTS);
  mask = gpu_mask(alloc);

  gs_jw_lit(&b, "{\"allocatedGPUs\":{");
  for (uint32_t ci = 0; ci < ncont; ci++) {
    bool f = true;
    if (ci)
      gs_jw_lit(&b, ",");
    gs_jw_key_uint(&b, conts[ci]);
    gs_jw_lit(&b, "[");
    for (uint32_t g = 0; g < GS_MAX_GPUS; g++) {
      for (uint32_t i = 0; i < alloc->nparts; i++) {
        if (alloc->parts[i].container == conts[ci] && alloc->parts[i].gpu == g) {
          gs_jw_lit(&b, f ? "\"" : ",\"");
          gs_jw_uint(&b, g);
          gs_jw_lit(&b, "\"");
          f = false;
          break;
        }
      }
    }
    gs_jw_lit(&b, "]");
  }
  gs_jw_lit(&b, "},\"visibleGPUs\":[");
  for (uint32_t g = 0; g < GS_MAX_GPUS; g++) {
    if (!(mask & (UINT64_C(1) << g)))
      continue;
    gs_jw_lit(&b, first ? "\"" : ",\"");
    gs_jw_uint(&b, g);
    gs_jw_lit(&b, "\"");
    first = false;
  }
  gs_jw_lit(&b, "],\"assumeTime\":");
  gs_jw_int(&b, alloc->assume_time_ns);
  gs_jw_lit(&b, ",\"assigned\":false}");
  err = put(ret, GS_ANN_TOPO_ALLOCATION, &b);
  gs_buf_release(&b);
  return err;
}

enum gs_err gs_annot_whole(const struct gs_alloc *alloc, struct gs_annotations *ret) {
  struct gs_annotations stage = {0};
  if (ret == NULL)
    return GS_EINVAL;
  return merge(ret, &stage, whole_values(alloc, &stage));
}
