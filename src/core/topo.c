/* Pair and set scores, and the choice of k GPUs that keeps good sets free.
 *
 * The objective (docs/topology.md): split ALL free GPUs into groups of k
 * (plus one leftover group of |free| mod k), value the split, and hand out
 * the best k-group of the best split. A group's value is its weakest link
 * first, then its total score. Splits add their groups' values up as a key
 * compared lexicographically:
 *   1. more groups joined entirely by NVLink;
 *   2. smaller strand penalty: sum over groups of PENALTY_BASE^(class steps
 *      below NVLink) of the weakest link, so fewer groups on SYS first, then
 *      fewer on NODE, ... (a leximin over weakest-link classes);
 *   3. larger sum of weakest-link scores (NVLink width counts here);
 *   4. larger sum of all pair scores.
 * Every split of one free set has the same number of groups of each size,
 * so sums compare fairly.
 *
 * Search: exact memoised DP over subsets of the free GPUs (the lowest GPU
 * of a subset always goes into the next group) while its estimated cost
 * fits a budget; otherwise a deterministic iterated local search (greedy
 * starts, swaps and exact re-splits of two groups, perturbations) within a
 * work budget. Everything lives in one heap context per call: no globals,
 * reentrant. Shortcuts: no topology, k == |free|, all free pairs alike
 * (NVSwitch), k == 1.
 */
#include <gpushare/topo.h>

#include "alloc.h"

#include <stdlib.h>
#include <string.h>

/* Weakest-link penalty base: above the largest number of groups (64), so
 * one group a class lower outweighs every group of the classes above. */
#define PENALTY_BASE 65u
/* Local search: at most this many improving moves per start, and the
 * largest number of ways to re-split two groups exactly. */
#define LS_MAX_MOVES(m) (8u * (m) + 64u)
#define LS_RESPLIT_MAX 16384u
/* Work units of one evaluation besides its pair visits (calibrated so a
 * unit stays near 1-3 ns for small groups too). */
#define LS_EVAL_COST 8u

/* ---- pair and set scores ------------------------------------------------ */

static uint32_t link_score(uint8_t link, uint8_t nvlinks) {
  switch (link) {
  case GS_LINK_NV:
    return GS_TOPO_SCORE_NV * (nvlinks ? nvlinks : 1u);
  case GS_LINK_PIX:
    return GS_TOPO_SCORE_PIX;
  case GS_LINK_PXB:
    return GS_TOPO_SCORE_PXB;
  case GS_LINK_PHB:
    return GS_TOPO_SCORE_PHB;
  case GS_LINK_NODE:
    return GS_TOPO_SCORE_NODE;
  case GS_LINK_SYS:
    return GS_TOPO_SCORE_SYS;
  default:
    return 0; /* unknown (only in unchecked input) ranks below SYS */
  }
}

uint32_t gs_topo_pair_score(const struct gs_topo *t, uint32_t a, uint32_t b) {
  if (a == b)
    return 0;
  if (t == NULL || t->n == 0)
    return GS_TOPO_SCORE_EQUAL;
  if (a >= t->n || b >= t->n)
    return 0;
  return link_score(t->link[a * t->n + b], t->nvlinks[a * t->n + b]);
}

static bool has_topo(const struct gs_topo *t) {
  return t != NULL && t->n > 0;
}

static uint64_t mask_below(uint32_t n) {
  return n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
}

static uint32_t ctz64(uint64_t x) {
  return (uint32_t)__builtin_ctzll(x);
}

static uint32_t popcount64(uint64_t x) {
  return (uint32_t)__builtin_popcountll(x);
}

uint32_t gs_topo_set_score(const struct gs_topo *t, uint64_t set) {
  uint32_t a, b, min = UINT32_MAX, minlink = GS_LINK_SELF, maxnv = 0;
  if (set == 0)
    return 0;
  if (!has_topo(t))
    return popcount64(set) == 1 ? 10 : 5;
  if (set & ~mask_below(t->n))
    return 0;
  if (popcount64(set) == 1)
    return 10;
  for (a = 0; a < t->n; a++) {
    for (b = a + 1; b < t->n; b++) {
      uint8_t l = t->link[a * t->n + b], nv = t->nvlinks[a * t->n + b];
      uint32_t s = link_score(l, nv);
      if (l == GS_LINK_NV && nv > maxnv)
        maxnv = nv;
      if ((set >> a & 1) && (set >> b & 1) && s < min) {
        min = s;
        minlink = l;
      }
    }
  }
  switch (minlink) {
  case GS_LINK_NV:
    return 8 + (maxnv ? (2 * (min / GS_TOPO_SCORE_NV)) / maxnv : 2);
  case GS_LINK_PIX:
    return 7;
  case GS_LINK_PXB:
    return 6;
  case GS_LINK_PHB:
    return 5;
  case GS_LINK_NODE:
    return 3;
  case GS_LINK_SYS:
    return 1;
  default:
    return 0;
  }
}

/* ---- partition keys ----------------------------------------------------- */

/* Additive value of a group or of a whole split; see the file comment. */
struct pkey {
  uint64_t penalty; /* smaller is better */
  uint32_t minsum;
  uint32_t sum;
  uint16_t allnv;
  uint16_t done; /* memo slot filled */
};

/* PENALTY_BASE^(steps - 1) for a weakest link `steps` classes below
 * NVLink: PIX 1 step, PXB 2, PHB 3, NODE 4, SYS 5, unknown 6; NVLink 0. */
static uint64_t penalty_of(uint32_t min_score) {
  uint32_t steps;
  uint64_t p = 1;
  if (min_score >= GS_TOPO_SCORE_NV)
    return 0;
  steps = min_score == 0 ? 6u : (GS_TOPO_SCORE_PIX - min_score) / 10u + 1u;
  for (uint32_t i = 1; i < steps; i++)
    p *= PENALTY_BASE;
  return p;
}

static struct pkey group_key(uint32_t size, uint32_t min, uint32_t sum) {
  struct pkey k = {0, 0, 0, 0, 0};
  if (size < 2)
    return k; /* a lone leftover GPU: the same in every split */
  k.allnv = min >= GS_TOPO_SCORE_NV;
  k.penalty = penalty_of(min);
  k.minsum = min;
  k.sum = sum;
  return k;
}

static void pkey_add(struct pkey *acc, const struct pkey *x) {
  acc->allnv = (uint16_t)(acc->allnv + x->allnv);
  acc->penalty += x->penalty;
  acc->minsum += x->minsum;
  acc->sum += x->sum;
}

/* > 0 when a is better than b, 0 when equal. */
static int pkey_cmp(const struct pkey *a, const struct pkey *b) {
  if (a->allnv != b->allnv)
    return a->allnv > b->allnv ? 1 : -1;
  if (a->penalty != b->penalty)
    return a->penalty < b->penalty ? 1 : -1;
  if (a->minsum != b->minsum)
    return a->minsum > b->minsum ? 1 : -1;
  if (a->sum != b->sum)
    return a->sum > b->sum ? 1 : -1;
  return 0;
}

/* True when set a has "lower indices" than b (equal sizes): the lowest GPU
 * in which they differ belongs to a. */
static bool lower_indices(uint64_t a, uint64_t b) {
  uint64_t x = a ^ b;
  return x != 0 && (a & (x & (~x + 1))) != 0;
}

/* ---- search context ------------------------------------------------------- */

struct chooser {
  uint32_t m, k, r;             /* free GPUs, group size, leftover size */
  uint8_t gpu[GS_MAX_GPUS];     /* local index → GPU index (ascending) */
  uint32_t score[GS_MAX_GPUS][GS_MAX_GPUS];
  struct pkey *memo;            /* exact search: 2^m slots */
  uint64_t work;                /* work units spent (GS_TOPO_EXACT_WORK) */
  struct pkey found;            /* key of the split the search settled on */
  uint64_t all;                 /* local mask of every free GPU */
};

/* Key of the group given as a local mask. */
static struct pkey mask_key(const struct chooser *c, uint64_t g) {
  uint32_t min = UINT32_MAX, sum = 0, size = popcount64(g);
  for (uint64_t a = g; a; a &= a - 1) {
    uint32_t i = ctz64(a);
    for (uint64_t b = a & (a - 1); b; b &= b - 1) {
      uint32_t s = c->score[i][ctz64(b)];
      sum += s;
      if (s < min)
        min = s;
    }
  }
  return group_key(size, min, sum);
}

/* ---- exact search: memoised DP over subsets --------------------------- */

static const struct pkey *dp_best(struct chooser *c, uint32_t set);

struct dfs {
  struct chooser *c;
  uint32_t set;   /* the state being solved */
  uint32_t need;  /* members still to add */
  struct pkey best;
  bool have;
};

/* Adds members above `from` to group g (min/sum so far) until complete. */
static void dp_extend(struct dfs *d, uint32_t from, uint32_t g, uint32_t size, uint32_t min,
                      uint32_t sum) {
  struct chooser *c = d->c;
  if (d->need == 0) {
    struct pkey cand = group_key(size, min, sum);
    const struct pkey *rest;
    c->work += size; /* the DFS steps that built this group */
    rest = dp_best(c, d->set & ~g);
    pkey_add(&cand, rest);
    if (!d->have || pkey_cmp(&cand, &d->best) > 0) {
      d->best = cand;
      d->have = true;
    }
    return;
  }
  for (uint32_t x = from; x < c->m; x++) {
    uint32_t nmin = min, nsum = sum;
    if (!(d->set >> x & 1))
      continue;
    if ((uint32_t)popcount64(d->set >> x) < d->need)
      break; /* not enough GPUs left above x */
    for (uint32_t a = g; a; a &= a - 1) {
      uint32_t s = c->score[ctz64(a)][x];
      nsum += s;
      if (s < nmin)
        nmin = s;
    }
    d->need--;
    dp_extend(d, x + 1, g | (1u << x), size + 1, nmin, nsum);
    d->need++;
  }
}

/* Best key of splitting `set` (local mask) into groups of k, plus the
 * leftover group of r while |set| mod k == r != 0. */
static const struct pkey *dp_best(struct chooser *c, uint32_t set) {
  struct pkey *e = &c->memo[set];
  uint32_t s, low;
  struct dfs d;
  if (e->done)
    return e;
  if (set == 0) {
    e->done = 1;
    return e;
  }
  s = popcount64(set);
  low = ctz64(set);
  memset(&d, 0, sizeof d);
  d.c = c;
  d.set = set;
  if (s >= c->k) {
    d.need = c->k - 1;
    dp_extend(&d, low + 1, 1u << low, 1, UINT32_MAX, 0);
  }
  if (c->r != 0 && s % c->k == c->r) {
    d.need = c->r - 1;
    dp_extend(&d, low + 1, 1u << low, 1, UINT32_MAX, 0);
  }
  d.best.done = 1;
  *e = d.best;
  return e;
}

static uint64_t binom(uint32_t n, uint32_t k) {
  uint64_t v = 1;
  if (k > n)
    return 0;
  if (k > n - k)
    k = n - k;
  for (uint32_t i = 1; i <= k; i++) {
    v = v * (n - k + i) / i; /* exact: v * (n-k+i) is divisible by i */
    if (v > UINT64_MAX / 64)
      return UINT64_MAX / 64;
  }
  return v;
}

/* Upper bound of the DP's cost for m free GPUs and groups of k, in work
 * units (one DFS step or pair visit, 1-3 ns each): every subset of a
 * reachable size times the groups through its lowest GPU times their size,
 * plus the final pass over all k-groups. */
static uint64_t dp_work_estimate(uint32_t m, uint32_t k) {
  uint32_t r = m % k;
  uint64_t total = binom(m, k) * k * k;
  for (uint32_t s = 1; s <= m; s++) {
    uint64_t w = 0;
    if (s % k != r && s % k != 0)
      continue; /* sizes ≡ 0 are the states after the leftover is placed */
    if (s >= k)
      w += binom(s - 1, k - 1) * k;
    if (r != 0 && s % k == r)
      w += binom(s - 1, r - 1) * r;
    total += binom(m, s) * w;
    if (total > UINT64_MAX / 128)
      return UINT64_MAX / 128;
  }
  return total;
}

/* Exact choice: the best k-group among those that belong to an optimal
 * split; lexicographic enumeration makes the first of equals the lowest. */
static enum gs_err choose_exact(struct chooser *c, uint64_t *ret_local) {
  uint32_t idx[GS_MAX_GPUS];
  struct pkey target, pick_key = {0, 0, 0, 0, 0};
  uint64_t pick = 0;
  bool have = false;
  uint32_t k = c->k, m = c->m;

  c->memo = gs_calloc((size_t)1 << m, sizeof *c->memo);
  if (c->memo == NULL)
    return GS_ENOMEM;
  target = *dp_best(c, (uint32_t)c->all);
  c->found = target;

  /* Enumerate k-subsets in lexicographic order. */
  for (uint32_t i = 0; i < k; i++)
    idx[i] = i;
  for (;;) {
    uint32_t g = 0;
    struct pkey gk, total;
    for (uint32_t i = 0; i < k; i++)
      g |= 1u << idx[i];
    gk = mask_key(c, g);
    c->work += k * k / 2;
    if (!have || pkey_cmp(&gk, &pick_key) > 0) {
      total = gk;
      pkey_add(&total, dp_best(c, (uint32_t)c->all & ~g));
      if (pkey_cmp(&total, &target) == 0) {
        pick = g;
        pick_key = gk;
        have = true;
      }
    }
    /* next combination */
    int32_t i = (int32_t)k - 1;
    while (i >= 0 && idx[i] == m - k + (uint32_t)i)
      i--;
    if (i < 0)
      break;
    idx[i]++;
    for (uint32_t j = (uint32_t)i + 1; j < k; j++)
      idx[j] = idx[j - 1] + 1;
  }
  gs_free(c->memo);
  c->memo = NULL;
  /* Some k-group always belongs to an optimal split. */
  if (!have)
    return GS_EINVAL;
  *ret_local = pick;
  return GS_EOK;
}

/* ---- bounded search: greedy starts + pairwise swaps ---------------------- */

struct split {
  uint32_t ngroups;
  uint64_t group[GS_MAX_GPUS]; /* local masks; the leftover group is last */
  struct pkey key[GS_MAX_GPUS];
  struct pkey total;
};

static void split_total(struct split *sp) {
  memset(&sp->total, 0, sizeof sp->total);
  for (uint32_t g = 0; g < sp->ngroups; g++)
    pkey_add(&sp->total, &sp->key[g]);
}

/* Grows a group of `size` from `seed` (or from the best remaining pair when
 * seed is -1): each step adds the GPU that keeps (weakest, total) highest,
 * lowest index on ties. */
static uint64_t greedy_group(struct chooser *c, uint64_t avail, uint32_t size,
                             int32_t seed) {
  uint64_t g = 0;
  if (size == 0)
    return 0;
  if (seed >= 0) {
    g = UINT64_C(1) << seed;
  } else if (size >= 2) {
    uint32_t bs = 0;
    uint64_t bg = 0;
    for (uint64_t a = avail; a; a &= a - 1) {
      for (uint64_t b = a & (a - 1); b; b &= b - 1) {
        uint32_t s = c->score[ctz64(a)][ctz64(b)];
        if (bg == 0 || s > bs) {
          bs = s;
          bg = (a & (~a + 1)) | (b & (~b + 1));
        }
      }
    }
    g = bg;
  } else {
    g = avail & (~avail + 1);
  }
  while (popcount64(g) < size) {
    uint64_t best = 0;
    struct pkey bk = {0, 0, 0, 0, 0};
    for (uint64_t a = avail & ~g; a; a &= a - 1) {
      uint64_t bit = a & (~a + 1);
      struct pkey k = mask_key(c, g | bit);
      c->work += popcount64(g) * popcount64(g) / 2 + LS_EVAL_COST;
      if (best == 0 || pkey_cmp(&k, &bk) > 0) {
        best = bit;
        bk = k;
      }
    }
    g |= best;
  }
  return g;
}

static void greedy_split(struct chooser *c, int32_t seed, struct split *sp) {
  uint64_t avail = c->all;
  uint32_t full = c->m / c->k;
  sp->ngroups = 0;
  for (uint32_t i = 0; i < full; i++) {
    uint64_t g = greedy_group(c, avail, c->k, i == 0 ? seed : -1);
    sp->group[sp->ngroups++] = g;
    avail &= ~g;
  }
  if (avail)
    sp->group[sp->ngroups++] = avail; /* the leftover */
  for (uint32_t g = 0; g < sp->ngroups; g++)
    sp->key[g] = mask_key(c, sp->group[g]);
  split_total(sp);
}

/* Best re-split of groups ga and gb. exact: every way to deal their union
 * into their two sizes (when that is at most LS_RESPLIT_MAX ways); else
 * every swap of one GPU each. True when it improved the pair. */
static bool improve_pair(struct chooser *c, struct split *sp, uint32_t ga, uint32_t gb,
                         bool exact) {
  uint64_t u = sp->group[ga] | sp->group[gb], best_a = sp->group[ga];
  uint32_t na = popcount64(sp->group[ga]), nu = popcount64(u);
  /* pair visits of the two keys, plus the evaluation's fixed overhead */
  uint64_t cost = (na * na + (nu - na) * (nu - na)) / 2 + LS_EVAL_COST;
  uint8_t pos[GS_MAX_GPUS], idx[GS_MAX_GPUS];
  struct pkey best = sp->key[ga];
  uint32_t p = 0;

  pkey_add(&best, &sp->key[gb]);
  if (exact && binom(nu, na) <= LS_RESPLIT_MAX) {
    for (uint64_t x = u; x; x &= x - 1)
      pos[p++] = (uint8_t)ctz64(x);
    for (uint32_t i = 0; i < na; i++)
      idx[i] = (uint8_t)i;
    for (;;) {
      uint64_t a = 0;
      struct pkey ka, kb;
      int32_t i = (int32_t)na - 1;
      for (uint32_t j = 0; j < na; j++)
        a |= UINT64_C(1) << pos[idx[j]];
      ka = mask_key(c, a);
      kb = mask_key(c, u & ~a);
      pkey_add(&ka, &kb);
      c->work += cost;
      if (pkey_cmp(&ka, &best) > 0) {
        best = ka;
        best_a = a;
      }
      while (i >= 0 && idx[i] == nu - na + (uint32_t)i)
        i--;
      if (i < 0)
        break;
      idx[i]++;
      for (uint32_t j = (uint32_t)i + 1; j < na; j++)
        idx[j] = (uint8_t)(idx[j - 1] + 1);
    }
  } else {
    for (uint64_t x = sp->group[ga]; x; x &= x - 1) {
      for (uint64_t y = sp->group[gb]; y; y &= y - 1) {
        uint64_t a = (sp->group[ga] & ~(x & (~x + 1))) | (y & (~y + 1));
        struct pkey ka = mask_key(c, a), kb = mask_key(c, u & ~a);
        pkey_add(&ka, &kb);
        c->work += cost;
        if (pkey_cmp(&ka, &best) > 0) {
          best = ka;
          best_a = a;
        }
      }
    }
  }
  if (best_a == sp->group[ga])
    return false;
  sp->group[ga] = best_a;
  sp->group[gb] = u & ~best_a;
  sp->key[ga] = mask_key(c, sp->group[ga]);
  sp->key[gb] = mask_key(c, sp->group[gb]);
  return true;
}

/* Improves pairs of groups in a fixed order until a full round changes
 * nothing, the move cap is reached or the work budget is spent; every move
 * strictly raises the key. */
static void local_search(struct chooser *c, struct split *sp, bool exact) {
  uint32_t moves = 0;
  bool improved = true;
  while (improved && moves < LS_MAX_MOVES(c->m)) {
    improved = false;
    for (uint32_t ga = 0; ga < sp->ngroups; ga++) {
      for (uint32_t gb = ga + 1; gb < sp->ngroups; gb++) {
        if (c->work >= GS_TOPO_BOUNDED_WORK)
          goto out;
        if (improve_pair(c, sp, ga, gb, exact)) {
          improved = true;
          moves++;
        }
      }
    }
  }
out:
  split_total(sp);
}

/* Deterministic pseudo-random numbers for the perturbations (no globals,
 * no libc rand: the same input always gives the same choice). */
static uint32_t lcg_next(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

/* Moves one GPU around a cycle of three groups (sizes unchanged). */
static void perturb(const struct chooser *c, struct split *sp, uint32_t *rng) {
  uint32_t g[3], n = sp->ngroups;
  uint64_t pick[3];
  g[0] = lcg_next(rng) % n;
  g[1] = (g[0] + 1 + lcg_next(rng) % (n - 1)) % n;
  do
    g[2] = lcg_next(rng) % n;
  while (g[2] == g[0] || g[2] == g[1]);
  for (uint32_t i = 0; i < 3; i++) {
    uint64_t x = sp->group[g[i]];
    uint32_t skip = lcg_next(rng) % popcount64(x);
    while (skip--)
      x &= x - 1;
    pick[i] = x & (~x + 1);
  }
  for (uint32_t i = 0; i < 3; i++) {
    sp->group[g[i]] = (sp->group[g[i]] & ~pick[i]) | pick[(i + 2) % 3];
    sp->key[g[i]] = mask_key(c, sp->group[g[i]]);
  }
  split_total(sp);
}

/* Bounded search: greedy starts polished by swaps; the best start polished
 * by exact pair re-splits; then perturb-and-polish rounds (iterated local
 * search) while the work budget lasts. Deterministic. */
static enum gs_err choose_bounded(struct chooser *c, uint64_t *ret_local) {
  struct split *best, *cur;
  uint64_t pick = 0;
  struct pkey pk = {0, 0, 0, 0, 0};
  uint32_t rng = 0x9e3779b9u ^ c->m ^ (c->k << 8);

  best = gs_malloc(sizeof *best);
  cur = gs_malloc(sizeof *cur);
  if (best == NULL || cur == NULL) {
    gs_free(best);
    gs_free(cur);
    return GS_ENOMEM;
  }
  /* The best-pair greedy, then one seeded by each free GPU. */
  for (int32_t seed = -1; seed < (int32_t)c->m; seed++) {
    if (seed >= 0 && c->work >= GS_TOPO_BOUNDED_WORK / 4)
      break;
    greedy_split(c, seed, cur);
    local_search(c, cur, false);
    if (seed == -1 || pkey_cmp(&cur->total, &best->total) > 0) {
      struct split *tmp = best;
      best = cur;
      cur = tmp;
    }
  }
  local_search(c, best, true);
  for (uint32_t round = 0; best->ngroups >= 3 && round < LS_MAX_MOVES(c->m); round++) {
    if (c->work >= GS_TOPO_BOUNDED_WORK)
      break;
    memcpy(cur, best, sizeof *cur);
    perturb(c, cur, &rng);
    local_search(c, cur, false);
    local_search(c, cur, true);
    if (pkey_cmp(&cur->total, &best->total) > 0) {
      struct split *tmp = best;
      best = cur;
      cur = tmp;
    }
  }
  for (uint32_t g = 0; g < best->ngroups; g++) {
    int cmp;
    if (popcount64(best->group[g]) != c->k)
      continue;
    cmp = pick ? pkey_cmp(&best->key[g], &pk) : 1;
    if (cmp > 0 || (cmp == 0 && lower_indices(best->group[g], pick))) {
      pick = best->group[g];
      pk = best->key[g];
    }
  }
  c->found = best->total;
  gs_free(best);
  gs_free(cur);
  *ret_local = pick;
  return GS_EOK;
}

/* ---- shortcuts and entry points ------------------------------------------ */

static uint64_t lowest_k(uint64_t mask, uint32_t k) {
  uint64_t out = 0;
  for (uint32_t i = 0; i < k; i++) {
    uint64_t bit = mask & (~mask + 1);
    out |= bit;
    mask &= ~bit;
  }
  return out;
}

/* One GPU: every split into singletons ties, so take the GPU the others
 * need least: the weakest best link, then the smallest total, then the
 * lowest index. */
static uint32_t least_connected(const struct chooser *c) {
  uint32_t pick = 0, pbest = UINT32_MAX;
  uint64_t ptot = UINT64_MAX;
  for (uint32_t i = 0; i < c->m; i++) {
    uint32_t best = 0;
    uint64_t tot = 0;
    for (uint32_t j = 0; j < c->m; j++) {
      if (j == i)
        continue;
      tot += c->score[i][j];
      if (c->score[i][j] > best)
        best = c->score[i][j];
    }
    if (best < pbest || (best == pbest && tot < ptot)) {
      pick = i;
      pbest = best;
      ptot = tot;
    }
  }
  return pick;
}

/* True when every pair of free GPUs has the same link (NVSwitch nodes). */
static bool links_uniform(const struct gs_topo *t, const struct chooser *c) {
  uint32_t a0 = c->gpu[0], b0 = c->gpu[1];
  for (uint32_t i = 0; i < c->m; i++) {
    for (uint32_t j = i + 1; j < c->m; j++) {
      uint32_t a = c->gpu[i], b = c->gpu[j];
      if (t->link[a * t->n + b] != t->link[a0 * t->n + b0] ||
          t->nvlinks[a * t->n + b] != t->nvlinks[a0 * t->n + b0])
        return false;
    }
  }
  return true;
}

/* The search proper: 2 <= m free GPUs, 1 <= k < m, a topology. */
static enum gs_err choose_among(const struct gs_topo *t, uint64_t free_mask, uint32_t k,
                                uint64_t exact_work, uint64_t *ret_set,
                                struct gs_topo_stats *stats) {
  struct chooser *c = gs_calloc(1, sizeof *c);
  uint64_t local = 0, out = 0;
  enum gs_err err = GS_EOK;

  if (c == NULL)
    return GS_ENOMEM;
  for (uint64_t f = free_mask; f; f &= f - 1)
    c->gpu[c->m++] = (uint8_t)ctz64(f);
  c->k = k;
  c->r = c->m % k;
  c->all = mask_below(c->m);
  for (uint32_t i = 0; i < c->m; i++)
    for (uint32_t j = 0; j < c->m; j++)
      c->score[i][j] = gs_topo_pair_score(t, c->gpu[i], c->gpu[j]);

  if (links_uniform(t, c)) {
    local = mask_below(k); /* every k-set is alike: the lowest */
  } else if (k == 1) {
    local = UINT64_C(1) << least_connected(c);
  } else if (c->m <= GS_TOPO_EXACT_GPUS && dp_work_estimate(c->m, k) <= exact_work) {
    stats->exact = stats->searched = true;
    err = choose_exact(c, &local);
  } else {
    stats->searched = true;
    err = choose_bounded(c, &local);
  }
  if (err != GS_EOK)
    goto out_free;
  stats->work = c->work;
  stats->split_allnv = c->found.allnv;
  stats->split_penalty = c->found.penalty;
  stats->split_minsum = c->found.minsum;
  stats->split_sum = c->found.sum;
  for (uint64_t l = local; l; l &= l - 1)
    out |= UINT64_C(1) << c->gpu[ctz64(l)];
  *ret_set = out;
out_free:
  gs_free(c);
  return err;
}

enum gs_err gs_topo_choose_ex(const struct gs_topo *t, uint64_t free_mask, uint32_t k,
                              uint64_t exact_work, uint64_t *ret_set,
                              struct gs_topo_stats *ret_stats) {
  struct gs_topo_stats stats;
  uint64_t out;
  uint32_t m = popcount64(free_mask);

  memset(&stats, 0, sizeof stats);
  if (k == 0 || ret_set == NULL)
    return GS_EINVAL;
  if (has_topo(t) && (free_mask & ~mask_below(t->n)))
    return GS_EINVAL;
  if (k > m)
    return GS_ENOFIT;
  if (!has_topo(t) || k == m) {
    out = lowest_k(free_mask, k);
  } else {
    enum gs_err err = choose_among(t, free_mask, k, exact_work, &out, &stats);
    if (err != GS_EOK)
      return err;
  }
  *ret_set = out;
  if (ret_stats != NULL)
    *ret_stats = stats;
  return GS_EOK;
}

enum gs_err gs_topo_choose(const struct gs_topo *t, uint64_t free_mask, uint32_t k,
                           uint64_t *ret_set) {
  return gs_topo_choose_ex(t, free_mask, k, GS_TOPO_EXACT_WORK, ret_set, NULL);
}
