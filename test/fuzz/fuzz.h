/* gpushare — helpers shared by the libFuzzer targets (header-only).
 *
 * Each fuzz_<target>.c defines LLVMFuzzerTestOneInput. The same file is
 * built twice: with clang and -fsanitize=fuzzer,address,undefined into a
 * fuzzer (GS_FUZZ=ON), and with the normal compiler into a replay program
 * (replay.c supplies main) that ctest runs over the seed corpus and the
 * kept regression inputs. So a target must be deterministic and must not
 * rely on libFuzzer being present.
 *
 * Invariants are checked with FUZZ_CHECK, which aborts in both builds: a
 * wrong answer is a finding like a crash.
 */
#ifndef GS_FUZZ_H
#define GS_FUZZ_H

#include <gpushare/err.h>

#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);     \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

/* Every decoder error except running out of memory carries a diagnostic. */
#define FUZZ_CHECK_DIAG(err, diag) \
  FUZZ_CHECK((err) == GS_EOK || (err) == GS_ENOMEM || (diag).text[0] != '\0')

/* Deterministic hashing in jansson (its seed is random otherwise), once. */
static inline void fuzz_init(void) {
  static bool done;
  if (!done) {
    json_object_seed(1);
    done = true;
  }
}

/* A NUL-terminated malloc'd copy of the input. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL)
    abort();
  if (size > 0)
    memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* Reads input bytes as a small byte stream (for choices taken from the
 * input: chunk sizes, selectors). Past the end it yields zeros. */
struct fuzz_bytes {
  const uint8_t *p;
  size_t n;
};

static inline uint8_t fuzz_byte(struct fuzz_bytes *b) {
  uint8_t v;
  if (b->n == 0)
    return 0;
  v = *b->p++;
  b->n--;
  return v;
}

static char fuzz_dir[64];

/* Removes the temporary directory and the files in it (at exit). */
static inline void fuzz_tmpdir_remove(void) {
  DIR *d = opendir(fuzz_dir);
  struct dirent *e;
  char path[sizeof fuzz_dir + 256 + 2];
  if (d != NULL) {
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", fuzz_dir, e->d_name);
      (void)remove(path);
    }
    closedir(d);
  }
  (void)remove(fuzz_dir);
}

/* A unique temporary directory for this process (created once, removed at
 * exit). */
static inline const char *fuzz_tmpdir(void) {
  char *dir = fuzz_dir;
  if (dir[0] == '\0') {
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof fuzz_dir, "%s/gsfuzz.XXXXXX",
             base != NULL && base[0] != '\0' && strlen(base) < 40 ? base : "/tmp");
    if (mkdtemp(dir) == NULL) {
      perror("mkdtemp");
      abort();
    }
    atexit(fuzz_tmpdir_remove);
  }
  return dir;
}

/* Writes data to dir/name (replacing it); the path goes to path[cap]. */
static inline void fuzz_write_file(const char *name, const uint8_t *data, size_t size,
                                   char *path, size_t cap) {
  FILE *f;
  snprintf(path, cap, "%s/%s", fuzz_tmpdir(), name);
  f = fopen(path, "wb");
  if (f == NULL || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

#endif
