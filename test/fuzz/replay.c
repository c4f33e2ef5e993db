/* Replays fuzz inputs through a target's LLVMFuzzerTestOneInput without
 * libFuzzer, so the seed corpus and the kept crash inputs run in the
 * normal (gcc, ASan+UBSan) test build.
 *
 *   fuzz_replay_<target> DIR|FILE...
 *
 * Directories are read one level deep (files in name order; README* and
 * dot files skipped). A crash or a failed check aborts, which fails the
 * ctest; otherwise prints how many inputs ran and exits 0. A missing
 * argument is an error, an empty directory is not. */
#include "fuzz.h"

#include <dirent.h>
#include <sys/stat.h>

#define INPUT_MAX (16u * 1024u * 1024u)

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  size_t len = 0, got;
  if (f == NULL) {
    perror(path);
    return -1;
  }
  buf = malloc(INPUT_MAX);
  if (buf == NULL) {
    fclose(f);
    return -1;
  }
  while ((got = fread(buf + len, 1, INPUT_MAX - len, f)) > 0)
    len += got;
  fclose(f);
  /* An exact-size copy, so ASan sees reads past the end as libFuzzer would. */
  {
    uint8_t *exact = malloc(len > 0 ? len : 1);
    if (exact == NULL) {
      free(buf);
      return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    (void)LLVMFuzzerTestOneInput(exact, len);
    free(exact);
  }
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, unsigned *count) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  if (d == NULL) {
    perror(dir);
    return -1;
  }
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0)
      continue;
    if (n == cap) {
      char **fresh = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
      if (fresh == NULL)
        abort();
      names = fresh;
    }
    names[n] = strdup(e->d_name);
    if (names[n++] == NULL)
      abort();
  }
  closedir(d);
  if (n > 1)
    qsort(names, n, sizeof *names, name_cmp);
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      if (run_file(path) != 0)
        rc = -1;
      else
        (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  unsigned count = 0;
  int rc = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      if (run_dir(argv[i], &count) != 0)
        rc = 1;
    } else if (run_file(argv[i]) != 0) {
      rc = 1;
    } else {
      count++;
    }
  }
  printf("%s: %u inputs replayed\n", argv[0], count);
  return rc;
}
