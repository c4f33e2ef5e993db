/* gpushare — the extender: HTTP routes over the framework, fed by a
 * cluster backend (live apiserver or demo file). */
#ifndef GPUSHARE_SERVER_H
#define GPUSHARE_SERVER_H

#include "cluster.h"
#include "config.h"

#include <gpushare/err.h>

#include <signal.h>

struct gs_server;

/* Creates the server for cfg. Takes ownership of cluster. */
struct gs_server *gs_server_new(const struct gs_config *cfg, struct gs_cluster cluster,
                                struct gs_diag *diag);
/* Starts HTTP: /healthz answers at once; /readyz stays 503 and the verbs
 * answer "not ready" until gs_server_start and the first sync. */
enum gs_err gs_server_listen(struct gs_server *s, struct gs_diag *diag) GS_WUR;
/* Builds the ledger with the final policy (flags, config file and ConfigMap
 * merged) and starts the cluster backend. */
enum gs_err gs_server_start(struct gs_server *s, const struct gs_policy *policy,
                            struct gs_diag *diag) GS_WUR;
/* Runs periodic work (gang timeouts, stale assumptions) until *stop. */
void gs_server_run(struct gs_server *s, volatile sig_atomic_t *stop);
/* The bound HTTP port. */
uint16_t gs_server_port(const struct gs_server *s);
/* Stops and frees everything. Accepts NULL. */
void gs_server_free(struct gs_server *s);

#endif
