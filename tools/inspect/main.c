/* gpushare-inspect — prints the extender's ledger (GET /debug/ledger) as a
 * table, like Aliyun's `kubectl inspect gpushare`. This file parses the
 * command line and does the HTTP GET; format.c and request.c do the text.
 *
 * Exit status: 0 printed, 1 the extender could not be asked or answered
 * badly, 2 bad usage.
 */
#include "format.h"
#include "request.h"

#include <curl/curl.h>
#include <jansson.h>

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PROG "gpushare-inspect"
#define CONNECT_TIMEOUT_S 5L
#define TOTAL_TIMEOUT_S 30L

static const char usage_text[] =
    "Usage: " PROG " [--url URL] [-d|--details] [--json] [NODE]\n"
    "\n"
    "Prints how the GPU memory of the cluster is allocated, as the gpushare\n"
    "extender sees it (GET URL/debug/ledger): one row per node, one column per\n"
    "GPU, Allocated/Total in the active gpuMemoryUnit, then the cluster total.\n"
    "With NODE, only that node.\n"
    "\n"
    "Options:\n"
    "  --url URL       the extender's base URL (default " GS_INSPECT_DEFAULT_URL ")\n"
    "  -d, --details   per node: each GPU (in the unit and in MiB, health, owner\n"
    "                  of a topology GPU) and each pod holding a share of it\n"
    "  --json          print the extender's JSON answer, indented (wins over -d)\n"
    "  --cacert FILE   CA certificate(s) to verify an HTTPS extender with\n"
    "  -k, --insecure  do not verify the HTTPS extender's certificate\n"
    "  -h, --help      print this help and exit\n"
    "  --version       print the version and exit\n"
    "\n"
    "Amounts are counted in the unit shown in the GPU Memory(...) header\n"
    "(GiB for 1GiB, 128MiB for 128MiB). A whole number is exact; otherwise one\n"
    "decimal is shown, allocated memory rounded up and capacity rounded down, so\n"
    "the table never shows more free memory than there is. GPUs marked * are\n"
    "unhealthy and never chosen for new pods.\n"
    "\n"
    "Exit status: 0 printed, 1 the extender was unreachable or answered with an\n"
    "error, 2 bad usage.\n";

struct options {
  const char *url, *node, *cacert;
  bool details, json, insecure;
};

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void usage_error(const char *fmt, ...) {
  va_list ap;
  fputs(PROG ": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\nTry '" PROG " --help' for more information.\n", stderr);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct options *o) {
  enum { OPT_URL = 256, OPT_JSON, OPT_VERSION, OPT_CACERT };
  static const struct option longopts[] = {
      {"url", required_argument, NULL, OPT_URL},
      {"details", no_argument, NULL, 'd'},
      {"json", no_argument, NULL, OPT_JSON},
      {"cacert", required_argument, NULL, OPT_CACERT},
      {"insecure", no_argument, NULL, 'k'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, OPT_VERSION},
      {NULL, 0, NULL, 0},
  };
  int c;

  o->url = GS_INSPECT_DEFAULT_URL;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":dkh", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_URL:
      o->url = optarg;
      break;
    case 'd':
      o->details = true;
      break;
    case OPT_JSON:
      o->json = true;
      break;
    case OPT_CACERT:
      o->cacert = optarg;
      break;
    case 'k':
      o->insecure = true;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return 0;
    case OPT_VERSION:
      printf(PROG " %s\n", GS_VERSION);
      return 0;
    case ':':
      usage_error("option '%s' needs a value", argv[optind - 1]);
      return 2;
    default: /* '?': an unknown option, or a value given to a flag */
      if (optopt > 0 && optopt < 256 && strchr("dkh", optopt) == NULL)
        usage_error("unknown option '-%c'", optopt);
      else if (strncmp(argv[optind - 1], "--", 2) == 0 && strchr(argv[optind - 1], '=') != NULL)
        usage_error("option '%s' takes no value", argv[optind - 1]);
      else
        usage_error("unknown option '%s'", argv[optind - 1]);
      return 2;
    }
  }
  if (optind < argc)
    o->node = argv[optind++];
  if (optind < argc) {
    usage_error("unexpected argument '%s' (give at most one NODE)", argv[optind]);
    return 2;
  }
  if (o->node != NULL && o->node[0] == '\0') {
    usage_error("%s", "NODE must not be empty");
    return 2;
  }
  if (!gs_inspect_url_is_valid(o->url)) {
    usage_error("--url must be http://HOST[:PORT] or https://HOST[:PORT], not '%s'", o->url);
    return 2;
  }
  return -1;
}

/* The answer body, capped at GS_INSPECT_BODY_MAX. */
struct body {
  char *p;
  size_t len, cap;
  bool too_big, nomem;
};

static size_t on_data(char *data, size_t size, size_t n, void *arg) {
  struct body *b = arg;
  size_t add = size * n;
  if (add > GS_INSPECT_BODY_MAX - b->len) {
    b->too_big = true;
    return 0; /* aborts the transfer */
  }
  if (b->len + add + 1 > b->cap) {
    size_t ncap = b->cap ? b->cap : 64 * 1024;
    char *np;
    while (ncap < b->len + add + 1)
      ncap *= 2;
    if (ncap > GS_INSPECT_BODY_MAX + 1)
      ncap = GS_INSPECT_BODY_MAX + 1;
    np = realloc(b->p, ncap);
    if (np == NULL) {
      b->nomem = true;
      return 0;
    }
    b->p = np;
    b->cap = ncap;
  }
  memcpy(b->p + b->len, data, add);
  b->len += add;
  b->p[b->len] = '\0';
  return add;
}

static bool is_tls_error(CURLcode rc) {
  return rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CONNECT_ERROR ||
         rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CACERT_BADFILE ||
         rc == CURLE_SSL_ISSUER_ERROR;
}

/* GET url into *b and *ret_status. Prints the message and returns false on
 * failure. The first base_len bytes of base name the extender in messages. */
static bool fetch(const struct options *o, const char *url, const char *base, int base_len,
                  struct body *b, long *ret_status) {
  CURL *h;
  CURLcode rc;
  long status = 0;
  bool ok = false;

  h = curl_easy_init();
  if (h == NULL) {
    fprintf(stderr, PROG ": cannot start libcurl\n");
    return false;
  }
  curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the string form; the bitmask is deprecated */
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, TOTAL_TIMEOUT_S);
  curl_easy_setopt(h, CURLOPT_USERAGENT, PROG "/" GS_VERSION);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
  curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)GS_INSPECT_BODY_MAX);
  if (o->cacert != NULL)
    curl_easy_setopt(h, CURLOPT_CAINFO, o->cacert);
  if (o->insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  rc = curl_easy_perform(h);
  if (b->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
    fprintf(stderr, PROG ": the answer from %.*s exceeds the %zu MiB limit\n", base_len, base,
            GS_INSPECT_BODY_MAX >> 20);
    goto cleanup;
  }
  if (b->nomem) {
    fprintf(stderr, PROG ": out of memory reading the answer from %.*s\n", base_len, base);
    goto cleanup;
  }
  if (rc != CURLE_OK) {
    fprintf(stderr, PROG ": cannot reach the extender at %.*s: %s (%s)\n", base_len, base,
            curl_easy_strerror(rc),
            is_tls_error(rc) ? "use --cacert FILE, or --insecure"
                             : "is gpushare-extender running? use --url");
    goto cleanup;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  *ret_status = status;
  ok = true;
cleanup:
  curl_easy_cleanup(h);
  return ok;
}

/* Says why a non-200 answer is not a ledger. */
static void report_status(const struct options *o, const char *base, int base_len, long status,
                          const struct body *b) {
  char text[GS_INSPECT_ERROR_TEXT_MAX];
  gs_inspect_error_text(b->p, b->len, text, sizeof text);
  /* Our extender answers 404 "not found" for an unknown path: that is a
   * wrong --url, not an unknown node. */
  if (status == 404 && o->node != NULL && strcasecmp(text, "not found") != 0) {
    fprintf(stderr, PROG ": node \"%s\" is unknown to gpushare\n", o->node);
    return;
  }
  fprintf(stderr, PROG ": the extender at %.*s answered HTTP %ld%s%s%s\n", base_len, base, status,
          text[0] ? ": " : "", text,
          status == 404 ? " (is --url the extender's base URL?)" : "");
}

static bool write_out(const char *text) {
  size_t n = strlen(text);
  if (fwrite(text, 1, n, stdout) != n || fflush(stdout) != 0) {
    fprintf(stderr, PROG ": cannot write the output: %s\n", strerror(errno));
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  struct options o = {0};
  struct body b = {0};
  struct gs_diag diag = {{0}, {0}};
  json_error_t jerr;
  json_t *root = NULL;
  char *url = NULL, *text = NULL;
  const char *base;
  int base_len, status = 1;
  long http = 0;
  enum gs_err e;

  status = parse_args(argc, argv, &o);
  if (status >= 0)
    return status;
  status = 1;
  base = o.url;
  base_len = (int)gs_inspect_base_len(o.url);
  e = gs_inspect_url_new(o.url, o.node, &url);
  if (e != GS_EOK) {
    fprintf(stderr, PROG ": cannot build the request URL: %s\n", gs_strerror(e));
    return e == GS_ETOOBIG ? 2 : 1;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fprintf(stderr, PROG ": cannot initialise libcurl\n");
    goto free_url;
  }
  if (!fetch(&o, url, base, base_len, &b, &http))
    goto free_body;
  if (http != 200) {
    report_status(&o, base, base_len, http, &b);
    goto free_body;
  }
  root = json_loadb(b.p ? b.p : "", b.len, 0, &jerr);
  if (root == NULL) {
    fprintf(stderr, PROG ": the answer from %.*s is not valid JSON: %s (line %d, column %d)\n",
            base_len, base, jerr.text, jerr.line, jerr.column);
    goto free_body;
  }
  if (o.json) {
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text == NULL) {
      fprintf(stderr, PROG ": out of memory\n");
      goto free_json;
    }
    if (write_out(text) && write_out("\n"))
      status = 0;
    goto free_text;
  }
  e = gs_inspect_render(root, o.details ? GS_INSPECT_DETAILS : GS_INSPECT_TABLE, &text, &diag);
  if (e == GS_EPARSE || e == GS_ERANGE) {
    fprintf(stderr, PROG ": unexpected answer from %.*s: %s%s%s\n", base_len, base, diag.where,
            diag.where[0] ? ": " : "", diag.text);
    goto free_json;
  }
  if (e != GS_EOK) {
    fprintf(stderr, PROG ": cannot print the ledger: %s\n", gs_strerror(e));
    goto free_json;
  }
  if (write_out(text))
    status = 0;

free_text:
  free(text);
free_json:
  json_decref(root);
free_body:
  free(b.p);
  curl_global_cleanup();
free_url:
  free(url);
  return status;
}
