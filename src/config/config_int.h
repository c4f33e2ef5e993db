/* gpushare — internals shared by the files of src/config (not installed). */
#ifndef GPUSHARE_CONFIG_INT_H
#define GPUSHARE_CONFIG_INT_H

#include "config.h"

/* gs_yaml_parse / gs_yaml_load_file with flags. GS__YAML_PLAIN_TEXT keeps
 * plain scalars as strings (null still resolves), for readers that type
 * each field themselves, as Go's YAML does when decoding into a struct. */
#define GS__YAML_PLAIN_TEXT 1u
/* Every document of the stream, as a JSON array of their roots (empty
 * documents left out); anchors are per document, as YAML says. */
#define GS__YAML_ALL_DOCS 2u
enum gs_err gs__yaml_parse(const char *text, size_t len, const char *name, unsigned flags,
                           json_t **ret, struct gs_diag *diag) GS_WUR;
enum gs_err gs__yaml_load_file(const char *path, unsigned flags, json_t **ret,
                               struct gs_diag *diag) GS_WUR;

/* A YAML 1.1 boolean word (true/yes/on/y and false/no/off/n, in lower,
 * Capitalised or UPPER case), as a Go bool field reads it. */
bool gs__config_yaml_bool(const char *text, bool *ret);

/* gs_config_apply_data with a source for the messages: file NULL means a
 * ConfigMap ("invalid KEY VALUE: ..."), otherwise "invalid KEY VALUE in
 * FILE: ...". */
enum gs_err gs__config_apply(struct gs_policy *policy, const json_t *data, const char *file,
                             struct gs_diag *diag) GS_WUR;

/* Writes a short human form of v ("\"2GiB\"", "0", "a list") into buf. */
void gs__config_render(const json_t *v, char *buf, size_t size);

/* Resolves path against the directory of base_file (a kubeconfig or
 * --config file): absolute paths are kept; "x" next to "dir/file" becomes
 * "dir/x"; next to a bare "file" it stays "x". False if it does not fit. */
bool gs__config_resolve_path(const char *base_file, const char *path, char *out, size_t cap);

/* Rewrites diag->text as "WHAT WHERE: TEXT" so that the one line printed
 * by main names the file and position ("invalid kubeconfig k.yaml:3:1: ..."). */
void gs__config_diag_prefix(struct gs_diag *diag, const char *what);

#endif
