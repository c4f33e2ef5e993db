/* gang: the plugin's state, shared by gang.c (the hooks, whole-GPU plans)
 * and gang_mem.c (plans of memory-shared gangs). Internal to the plugin. */
#ifndef GPUSHARE_PLUGIN_GANG_INT_H
#define GPUSHARE_PLUGIN_GANG_INT_H

#include "gang.h"

#include <gpushare/ledger.h>
#include <gpushare/place.h>

#include <stdbool.h>
#include <stdint.h>

#define GANG_MAX 16384      /* jobs known at once; more are refused, not a crash */
#define MEMBERS_EXTRA 8     /* members beyond R kept (disagreeing pods) */

enum slot_state {
  SLOT_EMPTY = 0, /* nothing held: not planned yet, or its member left */
  SLOT_HELD,      /* the placeholder holds the GPUs; member may be assigned */
  SLOT_PLACED,    /* the member holds them, its bind not confirmed yet */
  SLOT_BOUND,     /* the member is bound there */
};

struct slot {
  enum slot_state state;
  char node[GS_NAME_MAX + 1];
  uint64_t gpus;
  uint64_t mib_per_gpu; /* a memory-shared gang: MiB held on each GPU of gpus; 0: whole GPUs */
  char member[GS_UID_MAX + 1]; /* "" = not assigned */
  char placeholder[GS_UID_MAX + 1];
};

/* What a member asks: k whole GPUs, or mem units of GPU memory over count
 * GPUs (aliyun.com/gpu-mem, aliyun.com/gpu-count), and its job's size. */
struct shape {
  uint64_t k;
  uint64_t mem;
  uint32_t count;
  uint32_t replicas;
};

/* A pod of the job that exists (pending or bound), in the order seen. */
struct member {
  char uid[GS_UID_MAX + 1];
  char name[GS_NAME_MAX + 1];
  struct shape shape;
};

struct gang {
  char ns[GS_NS_MAX + 1];
  char job[GS_NAME_MAX + 1];
  struct shape shape; /* the job's: from the first member seen */
  uint32_t replicas;  /* = shape.replicas */
  int64_t plan_ns;    /* when the held slots were planned; 0: none held */
  struct slot *slots; /* replicas entries */
  struct member *members;
  uint32_t nmembers, cap;
};

/* A memory-shared gang (its members ask aliyun.com/gpu-mem). */
static inline bool gs__gang_is_mem(const struct gang *g) { return g->shape.mem > 0; }

/* gang.c: a slot's placeholder UID, and its hold in the ledger (whole GPUs,
 * or mib_per_gpu on each GPU of a memory slot) and release. */
void gs__gang_placeholder_uid(const struct gang *g, uint32_t slot, char *out, size_t len);
enum gs_err gs__gang_hold(struct gs_ledger *ledger, const struct gang *g, const struct slot *s);
void gs__gang_unhold(struct gs_ledger *ledger, struct slot *s);

/* gang_mem.c: plans every empty slot of a memory-shared gang on the nodes
 * gpumem places memory pods on, each slot as gs_place_pick places one
 * member (the job's own nodes first, then the best score under the node
 * policy), holding each as it is planned so that the next sees it. Returns
 * how many slots are filled; nothing new is held unless every slot is. */
uint32_t gs__gang_plan_mem(struct gs_ledger *ledger, struct gang *g, const struct gs_policy *policy,
                           int64_t now);

#endif
