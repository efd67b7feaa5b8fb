/*
 * tests/tu_ptx.h: PTX text assembled by the CUDA toolkit's ptxas, for the
 * tests that emit PTX without a GPU (test_ptx_emit, test_ptx_fold).
 *
 *   tu_ptxas_path         ptxas on $PATH or in /usr/local/cuda/bin, or NULL
 *   tu_assert_assembles   ptxas -arch=sm_90 accepts a text; without ptxas
 *                         the check passes with a note (once)
 *
 * Apart from tu.h because it needs <sys/wait.h> and <unistd.h>, whose
 * names (P_ALL, ...) other tests use for their own.
 */
#ifndef WEFT_TESTS_TU_PTX_H
#define WEFT_TESTS_TU_PTX_H

#include <sys/wait.h>
#include <unistd.h>

#include "tu.h"

/* ptxas's path ($PATH first, then /usr/local/cuda/bin), or NULL. */
static inline const char *tu_ptxas_path(void)
{
    static char found[4096];
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len < sizeof found - 8) {
            snprintf(found, sizeof found, "%.*s/ptxas", (int)len, path);
            if (access(found, X_OK) == 0) {
                return found;
            }
        }
        path += len + (path[len] == ':');
    }
    if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) {
        return "/usr/local/cuda/bin/ptxas";
    }
    return NULL;
}

/* Fail unless ptxas -arch=sm_90 accepts the PTX text (named `what` in
 * the message, which holds ptxas's own, and the text goes to stderr);
 * without ptxas, pass with a note on stdout (once). */
static inline void tu_assert_assembles(const char *text, const char *what)
{
    const char *ptxas = tu_ptxas_path();
    if (!ptxas) {
        static bool told;
        if (!told) {
            printf("note: no ptxas on $PATH or in /usr/local/cuda/bin: PTX "
                   "not assembled\n");
            told = true;
        }
        return;
    }
    char file[] = "/tmp/weft_ptx_XXXXXX";
    int fd = mkstemp(file);
    ck_assert(fd >= 0);
    size_t len = strlen(text);
    ck_assert(write(fd, text, len) == (ssize_t)len);
    close(fd);
    char log[sizeof file + 8];
    snprintf(log, sizeof log, "%s.log", file);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90 %s -o /dev/null >%s 2>&1",
             ptxas, file, log);
    int rc = system(cmd);
    char out[2048] = "";
    FILE *f = fopen(log, "r");
    if (f) {
        size_t m = fread(out, 1, sizeof out - 1, f);
        out[m] = '\0';
        fclose(f);
    }
    unlink(log);
    bool ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
    if (!ok) {
        fprintf(stderr, "%s\n", text);
    }
    ck_assert_msg(ok, "ptxas rejects %s (%s): %s", what, file, out);
    unlink(file);
}

#endif /* WEFT_TESTS_TU_PTX_H */
