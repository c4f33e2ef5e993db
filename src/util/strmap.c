/* String-keyed hash map: open addressing, linear probing, backward-shift
 * deletion. See strmap.h for the ownership rules. */
#include "strmap.h"
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SLOTS 16u

struct slot {
  const char *key; /* NULL: empty */
  void *value;
  uint64_t hash; /* kept so growing and probing skip most compares */
  size_t len;    /* strlen(key): compares need no strcmp */
};

struct gs_strmap {
  struct slot *slots;
  size_t nslots; /* power of two */
  size_t count;
};

/* Eight bytes a step (the index hashes every node name of every request,
 * and FNV-1a byte by byte was 15% of a decision: docs/benchmarks.md, core):
 * each word is mixed in with a multiply and an xor-shift, the last partial
 * word loaded as two overlapping pieces so no byte outside the key is read.
 * Then a final avalanche (murmur3's fmix64) so that the low bits, the slot
 * index, depend on every byte: UIDs share long common prefixes. */
static uint64_t load64(const char *p) {
  uint64_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

static uint64_t load32(const char *p) {
  uint32_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

static uint64_t mix_word(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

static uint64_t hash_str(const char *s, size_t *ret_len) {
  size_t len = strlen(s);
  uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)len, tail;
  const char *p = s, *end = s + len;
  size_t rest;
  for (; end - p > 8; p += 8)
    h = mix_word(h, load64(p));
  /* 0..8 bytes left (0 only for ""): two overlapping 4-byte loads, or
   * first, middle and last byte, cover them all; with the length mixed in
   * above, no two keys give the same words. */
  rest = (size_t)(end - p);
  if (rest >= 4)
    tail = load32(p) | load32(end - 4) << 32;
  else if (rest > 0)
    tail = (uint64_t)(unsigned char)p[0] | (uint64_t)(unsigned char)p[rest / 2] << 8 |
           (uint64_t)(unsigned char)end[-1] << 16;
  else
    tail = 0;
  h = mix_word(h, tail);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  *ret_len = len;
  return h;
}

/* a and b, both len bytes long, are equal: 8 bytes a step, the last word
 * overlapping the one before. Inline: strcmp's call and set-up were 8% of
 * a decision, more than the compare itself (docs/benchmarks.md, core). */
bool gs__strmap_key_equal(const char *a, const char *b, size_t len) {
  size_t i;
  if (len < 4) /* first, middle and last byte cover up to 3 */
    return len == 0 || (a[0] == b[0] && a[len / 2] == b[len / 2] && a[len - 1] == b[len - 1]);
  if (len < 8)
    return load32(a) == load32(b) && load32(a + len - 4) == load32(b + len - 4);
  for (i = 0; i + 8 < len; i += 8)
    if (load64(a + i) != load64(b + i))
      return false;
  return load64(a + len - 8) == load64(b + len - 8);
}

struct gs_strmap *gs_strmap_new(void) {
  struct gs_strmap *map = gs_calloc(1, sizeof *map);
  if (map == NULL)
    return NULL;
  map->slots = gs_calloc(MIN_SLOTS, sizeof *map->slots);
  if (map->slots == NULL)
    goto free_map;
  map->nslots = MIN_SLOTS;
  return map;

free_map:
  gs_free(map);
  return NULL;
}

void gs_strmap_free(struct gs_strmap *map) {
  if (map == NULL)
    return;
  gs_free(map->slots);
  gs_free(map);
}

void gs_strmap_free_all(struct gs_strmap *map, void (*free_value)(void *value)) {
  size_t cur = 0;
  const char *key;
  void *value;
  while (map != NULL && gs_strmap_next(map, &cur, &key, &value))
    free_value(value);
  gs_strmap_free(map);
}

size_t gs_strmap_count(const struct gs_strmap *map) { return map->count; }

/* Slot holding key, or the empty slot where it would go. The table is never
 * full (load ≤ 3/4), so the probe always ends. */
static size_t find_slot(const struct gs_strmap *map, const char *key, size_t len,
                        uint64_t hash) {
  const struct slot *slots = map->slots;
  size_t mask = map->nslots - 1;
  for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
    const struct slot *s = &slots[i];
    if (s->key == NULL ||
        (s->hash == hash && s->len == len && gs__strmap_key_equal(s->key, key, len)))
      return i;
  }
}

void *gs_strmap_get(const struct gs_strmap *map, const char *key) {
  size_t len;
  uint64_t hash = hash_str(key, &len);
  size_t i = find_slot(map, key, len, hash);
  return map->slots[i].key != NULL ? map->slots[i].value : NULL;
}

uint64_t gs_strmap_hash(const char *key, size_t *ret_len) { return hash_str(key, ret_len); }

void gs_strmap_prefetch(const struct gs_strmap *map, uint64_t hash) {
#if defined(__GNUC__)
  __builtin_prefetch(&map->slots[(size_t)hash & (map->nslots - 1)]);
#else
  (void)map;
  (void)hash;
#endif
}

void gs_strmap_prefetch_entry(const struct gs_strmap *map, uint64_t hash) {
#if defined(__GNUC__)
  /* Whatever the home slot holds (NULL or another key's included): a
   * prefetch never faults, and a branch here would mispredict. */
  const struct slot *s = &map->slots[(size_t)hash & (map->nslots - 1)];
  __builtin_prefetch(s->key);
  __builtin_prefetch(s->value);
#else
  (void)map;
  (void)hash;
#endif
}

void *gs_strmap_get_hashed(const struct gs_strmap *map, const char *key, size_t len,
                           uint64_t hash) {
  size_t i = find_slot(map, key, len, hash);
  return map->slots[i].key != NULL ? map->slots[i].value : NULL;
}

static enum gs_err resize(struct gs_strmap *map, size_t nslots) {
  struct slot *old = map->slots;
  size_t old_n = map->nslots;
  struct slot *fresh = gs_calloc(nslots, sizeof *fresh);
  if (fresh == NULL)
    return GS_ENOMEM;
  map->slots = fresh;
  map->nslots = nslots;
  for (size_t i = 0; i < old_n; i++) {
    if (old[i].key != NULL)
      map->slots[find_slot(map, old[i].key, old[i].len, old[i].hash)] = old[i];
  }
  gs_free(old);
  return GS_EOK;
}

enum gs_err gs_strmap_reserve(struct gs_strmap *map, size_t n) {
  size_t want, nslots = map->nslots;
  if (n > GS_STRMAP_MAX_ENTRIES || map->count > GS_STRMAP_MAX_ENTRIES - n)
    return GS_ETOOBIG;
  want = map->count + n;
  /* Keep the load factor at or below 3/4. */
  while (want > nslots / 4 * 3)
    nslots *= 2;
  if (nslots == map->nslots)
    return GS_EOK;
  return resize(map, nslots);
}

enum gs_err gs_strmap_put(struct gs_strmap *map, const char *key, void *value) {
  size_t len;
  uint64_t hash = hash_str(key, &len);
  size_t i = find_slot(map, key, len, hash);
  enum gs_err err;
  if (map->slots[i].key != NULL)
    return GS_EEXISTS;
  err = gs_strmap_reserve(map, 1);
  if (err != GS_EOK)
    return err;
  i = find_slot(map, key, len, hash); /* the table may have been rebuilt */
  map->slots[i].key = key;
  map->slots[i].value = value;
  map->slots[i].hash = hash;
  map->slots[i].len = len;
  map->count++;
  return GS_EOK;
}

void *gs_strmap_del(struct gs_strmap *map, const char *key) {
  size_t mask = map->nslots - 1, len;
  uint64_t hash = hash_str(key, &len);
  size_t i = find_slot(map, key, len, hash);
  size_t j = i;
  void *value = map->slots[i].value;
  if (map->slots[i].key == NULL)
    return NULL;
  /* Backward shift: pull later members of the probe run into the hole when
   * their home slot is not in the cyclic interval (hole, themselves]. */
  for (;;) {
    size_t home;
    map->slots[i].key = NULL;
    do {
      j = (j + 1) & mask;
      if (map->slots[j].key == NULL) {
        map->count--;
        return value;
      }
      home = (size_t)map->slots[j].hash & mask;
    } while (i <= j ? (home > i && home <= j) : (home > i || home <= j));
    map->slots[i] = map->slots[j];
    i = j;
  }
}

bool gs_strmap_next(const struct gs_strmap *map, size_t *cursor, const char **ret_key,
                    void **ret_value) {
  for (size_t i = *cursor; i < map->nslots; i++) {
    if (map->slots[i].key != NULL) {
      *cursor = i + 1;
      *ret_key = map->slots[i].key;
      *ret_value = map->slots[i].value;
      return true;
    }
  }
  *cursor = map->nslots;
  return false;
}
