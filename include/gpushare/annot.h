/* gpushare — the annotations a Binding carries (docs/contract.md §4), formatted
 * without a JSON library: the shapes are fixed maps of integers, so plugins
 * (which include only the public headers) can produce them. src/api reads
 * them back with jansson. */
#ifndef GPUSHARE_ANNOT_H
#define GPUSHARE_ANNOT_H

#include <gpushare/ledger.h>

#define GS_ANNOT_MAX 24 /* annotations one bind may write */
#define GS_ANNOT_KEY_MAX 127

/* Annotations written by bind: key → value (value heap-owned). */
struct gs_annotations {
  size_t n;
  struct {
    char key[GS_ANNOT_KEY_MAX + 1];
    char *value;
  } kv[GS_ANNOT_MAX];
};
/* Adds or replaces key (value copied). GS_ETOOBIG past GS_ANNOT_MAX. */
enum gs_err gs_annotations_set(struct gs_annotations *a, const char *key,
                               const char *value) GS_WUR;
/* Value of key, or NULL. Borrowed. */
const char *gs_annotations_get(const struct gs_annotations *a, const char *key);
/* Frees the values; leaves an empty set. */
void gs_annotations_clear(struct gs_annotations *a);

#define GS_ANN_DEVICE_RESOURCE "gpushare.alibabacloud.com/device-resource"
#define GS_ANN_ALLOCATION "scheduler.framework.gpushare.allocation"
#define GS_ANN_ASSIGNED "scheduler.framework.gpushare.assigned"
#define GS_ANN_ASSUME_TIME "scheduler.framework.gpushare.assume-time"
#define GS_ANN_UNIT_MIB "gpushare.io/unit-mib"
#define GS_ANN_LEGACY_IDX "ALIYUN_COM_GPU_MEM_IDX"
#define GS_ANN_LEGACY_POD "ALIYUN_COM_GPU_MEM_POD"
#define GS_ANN_LEGACY_DEV "ALIYUN_COM_GPU_MEM_DEV"
#define GS_ANN_LEGACY_ASSIGNED "ALIYUN_COM_GPU_MEM_ASSIGNED"
#define GS_ANN_LEGACY_ASSUME_TIME "ALIYUN_COM_GPU_MEM_ASSUME_TIME"
#define GS_ANN_TOPO_ALLOCATION "gputopology.alibabacloud.com/allocation"

/* Writes the memory-pod annotations of alloc (kind MEM) on node to ret:
 * V2 allocation {"<container>":{"<gpu>":units}}, assigned "false",
 * assume-time, device-resource for every GPU of the node (in alloc's
 * unit), the legacy ALIYUN_COM_GPU_MEM_* keys and gpushare.io/unit-mib. */
enum gs_err gs_annot_mem(const struct gs_alloc *alloc, const struct gs_node *node,
                         struct gs_annotations *ret) GS_WUR;
/* Writes gputopology.alibabacloud.com/allocation for alloc (kind WHOLE). */
enum gs_err gs_annot_whole(const struct gs_alloc *alloc, struct gs_annotations *ret) GS_WUR;

#endif
