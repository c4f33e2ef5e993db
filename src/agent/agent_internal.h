/* gpushare — helpers shared by the src/agent files that answer the kubelet
 * (allocate.c, dra.c); not public. */
#ifndef GPUSHARE_AGENT_INTERNAL_H
#define GPUSHARE_AGENT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Appends printf-formatted text to the comma list in buf (cap bytes),
 * truncating at cap. */
void gs__agent_list_add(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* o[key] = the string value; 0 on success (json_object_set_new). */
int gs__agent_set_str(json_t *o, const char *key, const char *value);

/* o[key] = v in decimal, as a string; 0 on success. */
int gs__agent_set_u64(json_t *o, const char *key, uint64_t v);

#endif
