/*
 * runtime/disk.c: the disk cache of compiled kernels, for every compiled
 * backend: CPU object files (<key>.o) and GPU kernels' PTX (<key>.ptx)
 * side by side in one directory.
 *
 * One file per kernel, named by its key: <dir>/<64 hex digits><ext>.  The
 * key already covers the kernel, the target (triple, CPU, features, or the
 * SM), the LLVM version, RT_ABI_VERSION and WEFT_FLAG_FAST_MATH, so an
 * entry is valid wherever its name matches.  A file is
 *
 *     magic "WEFTOBJ1" | u32 ABI version | u32 header bytes | key[32] |
 *     u64 payload bytes | blake3(payload)[32] | payload (an ELF object,
 *     or PTX text)
 *
 * in host byte order (a cache is not shared between machines of different
 * byte order: the key's triple differs anyway).  Writers write a temporary
 * file in the same directory and rename it over the entry, so readers see
 * either no entry or a whole one, even with several processes at work.
 * Readers check everything in the header and the checksum: an entry that
 * fails, or is not a regular file (a FIFO, a device, a symbolic link: it is
 * opened without blocking and without following links), is deleted and
 * reported, and the caller recompiles and rewrites.
 *
 * The directory is bounded: after each write, if the entries add up to
 * more than max_bytes (the caller's, else the configuration's cache_max
 * or $WEFT_CACHE_MAX, else FE_CACHE_MAX_DEFAULT), the oldest by
 * modification time go first.  Any
 * problem with the directory (cannot create it, cannot write) switches the
 * cache off for this context, with the reason kept in `note`; compilation
 * never fails because of the disk.
 */
#ifdef WEFT_HAVE_LLVM

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llvm-c/blake3.h>

#include "rt.h"

static const char MAGIC[8] = {'W', 'E', 'F', 'T', 'O', 'B', 'J', '1'};

typedef struct header {
    char magic[8];
    uint32_t abi;
    uint32_t header_bytes;
    uint8_t key[32];
    uint64_t payload_bytes;
    uint8_t checksum[32];
} header;

enum { PATH_CAP = 4096 };

static void disable(rt_disk *d, const char *fmt, const char *a, int err)
{
    pthread_mutex_lock(&d->lock);
    if (d->enabled) {
        d->enabled = false;
        char what[160];
        snprintf(what, sizeof what, fmt, a ? a : "");
        snprintf(d->note, sizeof d->note, "disk cache off: %s: %s", what,
                 strerror(err));
    }
    pthread_mutex_unlock(&d->lock);
}

/* mkdir -p: 0 or an errno. */
static int make_dirs(char *path)
{
    size_t n = strlen(path);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] == '/' || path[i] == '\0') {
            char c = path[i];
            path[i] = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST) {
                int e = errno;
                path[i] = c;
                return e;
            }
            path[i] = c;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        return errno;
    }
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

void rt_disk_open(rt_disk *d, weft_context *ctx, const char *dir,
                  uint64_t max_bytes, bool disabled, const char *ext)
{
    memset(d, 0, sizeof *d);
    d->ctx = ctx;
    d->ext = ext;
    pthread_mutex_init(&d->lock, NULL);
    d->max_bytes = max_bytes;
    if (!d->max_bytes) {
        d->max_bytes = ctx && ctx->cfg.cache_max ? ctx->cfg.cache_max
                                                 : FE_CACHE_MAX_DEFAULT;
    }
    if (disabled) {
        snprintf(d->note, sizeof d->note, "disk cache off: not asked for");
        return;
    }
    bool env = !(ctx && (ctx->cfg.flags & WEFT_FLAG_NO_ENV));
    const char *base = dir;
    const char *suffix = "";
    if (!base && ctx) {
        base = ctx->cfg.cache_dir;
    }
    if (!base && env) {
        const char *e;
        if ((e = getenv("WEFT_CACHE_DIR")) && *e) {
            base = e;
        } else if ((e = getenv("XDG_CACHE_HOME")) && *e) {
            base = e;
            suffix = "/weft";
        } else if ((e = getenv("HOME")) && *e) {
            base = e;
            suffix = "/.cache/weft";
        }
    }
    if (!base || !*base) {
        snprintf(d->note, sizeof d->note,
                 "disk cache off: no cache directory (no config, "
                 "$WEFT_CACHE_DIR, $XDG_CACHE_HOME or $HOME)");
        return;
    }
    size_t n = strlen(base) + strlen(suffix);
    if (n + 80 > PATH_CAP) {
        snprintf(d->note, sizeof d->note, "disk cache off: path too long");
        return;
    }
    char *p = fe_alloc(ctx, n + 1);
    if (!p) {
        snprintf(d->note, sizeof d->note, "disk cache off: out of memory");
        return;
    }
    snprintf(p, n + 1, "%s%s", base, suffix);
    while (n > 1 && p[n - 1] == '/') {
        p[--n] = '\0';
    }
    d->dir = p;
    d->dir_len = n;
    int e = make_dirs(p);
    if (e == 0 && access(p, W_OK | R_OK | X_OK) != 0) {
        e = errno;
    }
    if (e != 0) {
        snprintf(d->note, sizeof d->note, "disk cache off: %.200s: %s", p,
                 strerror(e));
        return;
    }
    d->enabled = true;
    snprintf(d->note, sizeof d->note, "%.250s", p);
}

void rt_disk_close(rt_disk *d)
{
    if (d->dir) {
        fe_free(d->ctx, d->dir, strlen(d->dir) + 1);
        d->dir = NULL;
    }
    pthread_mutex_destroy(&d->lock);
}

bool rt_disk_enabled(rt_disk *d)
{
    pthread_mutex_lock(&d->lock);
    bool on = d->enabled;
    pthread_mutex_unlock(&d->lock);
    return on;
}

char *rt_disk_path(rt_disk *d, const uint8_t key[32], size_t *n)
{
    if (!d->dir) {
        return NULL;
    }
    size_t ext = strlen(d->ext);
    *n = d->dir_len + 1 + 64 + ext + 1;
    char *p = fe_alloc(d->ctx, *n);
    if (!p) {
        return NULL;
    }
    char *q = p + snprintf(p, *n, "%s/", d->dir);
    for (int i = 0; i < 32; i++) {
        q += snprintf(q, 3, "%02x", key[i]);
    }
    memcpy(q, d->ext, ext + 1);
    return p;
}

static void checksum(const void *p, size_t n, uint8_t out[32])
{
    llvm_blake3_hasher h;
    llvm_blake3_hasher_init(&h);
    llvm_blake3_hasher_update(&h, p, n);
    llvm_blake3_hasher_finalize(&h, out, 32);
}

/* Read exactly n bytes; false on a short read or error. */
static bool read_all(int fd, void *buf, size_t n)
{
    unsigned char *b = buf;
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        b += r;
        n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t n)
{
    const unsigned char *b = buf;
    while (n > 0) {
        ssize_t r = write(fd, b, n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        b += r;
        n -= (size_t)r;
    }
    return true;
}

/* rt_disk_load, untimed. */
static int disk_load(rt_disk *d, const uint8_t key[32], void **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!rt_disk_enabled(d)) {
        return 0;
    }
    size_t pn;
    char *path = rt_disk_path(d, key, &pn);
    if (!path) {
        return 0;
    }
    int result = 0;
    void *payload = NULL;
    size_t payload_n = 0;
    /* Without blocking and without following a link: an entry that is a
     * FIFO, a device or a link is no entry of ours (opening a FIFO for
     * reading would wait for a writer); fstat then rejects anything but a
     * regular file, which the caller rewrites. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ELOOP) {
            result = -1; /* a symbolic link */
        }
        goto done; /* absent (or unreadable: treated as absent) */
    }
    result = -1;
    struct stat st;
    header h;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < sizeof h || !read_all(fd, &h, sizeof h)) {
        goto done;
    }
    if (memcmp(h.magic, MAGIC, sizeof MAGIC) != 0 || h.abi != RT_ABI_VERSION ||
        h.header_bytes != sizeof h || memcmp(h.key, key, 32) != 0 ||
        h.payload_bytes == 0 ||
        h.payload_bytes != (uint64_t)st.st_size - sizeof h ||
        h.payload_bytes > SIZE_MAX) {
        goto done;
    }
    payload_n = (size_t)h.payload_bytes;
    payload = fe_alloc(d->ctx, payload_n);
    if (!payload) {
        result = 0; /* no memory: just compile */
        goto done;
    }
    if (!read_all(fd, payload, payload_n)) {
        goto done;
    }
    uint8_t sum[32];
    checksum(payload, payload_n, sum);
    if (memcmp(sum, h.checksum, 32) != 0) {
        goto done;
    }
    *out = payload;
    *n = payload_n;
    payload = NULL;
    result = 1;
done:
    if (fd >= 0) {
        close(fd);
    }
    if (result < 0) {
        unlink(path); /* never trusted again; the caller rewrites it */
    }
    fe_free(d->ctx, payload, payload_n);
    fe_free(d->ctx, path, pn);
    return result;
}

typedef struct entry_info {
    char name[72];
    uint64_t bytes;
    struct timespec mtime;
} entry_info;

static bool is_entry_name(const char *s)
{
    for (int i = 0; i < 64; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return strcmp(s + 64, ".o") == 0 || strcmp(s + 64, ".ptx") == 0 ||
           strcmp(s + 64, ".cubin") == 0; /* an older weft's GPU kernels */
}

static int older_first(const void *a, const void *b)
{
    const entry_info *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) {
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    }
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) {
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

/* The entries of d's directory, open as `dir`: *np of them in *vp (room
 * for *capp, fe_alloc'd with d's context: the caller frees it), their
 * bytes in *total.  False when out of memory (what was listed so far is
 * kept). */
static bool list_entries(rt_disk *d, DIR *dir, entry_info **vp, size_t *np,
                         size_t *capp, uint64_t *total)
{
    int dfd = dirfd(dir);
    entry_info *v = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
    *total = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strlen(de->d_name) != 66 || !is_entry_name(de->d_name)) {
            continue;
        }
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode)) {
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            entry_info *nv =
                fe_realloc(d->ctx, v, cap * sizeof *v, nc * sizeof *v);
            if (!nv) {
                ok = false;
                break;
            }
            v = nv;
            cap = nc;
        }
        memcpy(v[n].name, de->d_name, 67);
        v[n].bytes = (uint64_t)st.st_size;
        v[n].mtime = st.st_mtim;
        *total += v[n].bytes;
        n++;
    }
    *vp = v;
    *np = n;
    *capp = cap;
    return ok;
}

/* Remove the oldest entries until the directory holds at most max_bytes.
 * Best effort: any failure leaves the directory as it is. */
static void trim(rt_disk *d)
{
    DIR *dir = opendir(d->dir);
    if (!dir) {
        return;
    }
    int dfd = dirfd(dir);
    entry_info *v;
    size_t n, cap;
    uint64_t total;
    if (list_entries(d, dir, &v, &n, &cap, &total) && total > d->max_bytes) {
        qsort(v, n, sizeof *v, older_first);
        for (size_t i = 0; i < n && total > d->max_bytes; i++) {
            if (unlinkat(dfd, v[i].name, 0) == 0) {
                total -= v[i].bytes;
            }
        }
    }
    fe_free(d->ctx, v, cap * sizeof *v);
    closedir(dir);
}

bool rt_disk_usage(rt_disk *d, uint64_t *bytes, uint64_t *entries)
{
    *bytes = 0;
    *entries = 0;
    DIR *dir = d->dir ? opendir(d->dir) : NULL;
    if (!dir) {
        return false;
    }
    entry_info *v;
    size_t n, cap;
    bool ok = list_entries(d, dir, &v, &n, &cap, bytes);
    *entries = n;
    fe_free(d->ctx, v, cap * sizeof *v);
    closedir(dir);
    return ok;
}

/* rt_disk_store, untimed. */
static uint64_t disk_store(rt_disk *d, const uint8_t key[32], const void *p,
                           size_t n)
{
    if (!rt_disk_enabled(d) || n == 0) {
        return 0;
    }
    size_t pn;
    char *path = rt_disk_path(d, key, &pn);
    if (!path) {
        return 0;
    }
    size_t tn = pn + 16;
    char *tmp = fe_alloc(d->ctx, tn);
    if (!tmp) {
        fe_free(d->ctx, path, pn);
        return 0;
    }
    snprintf(tmp, tn, "%s/.tmp-XXXXXX", d->dir);
    uint64_t written = 0;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        disable(d, "cannot create a file in %s", d->dir, errno);
        goto out;
    }
    header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    h.abi = RT_ABI_VERSION;
    h.header_bytes = sizeof h;
    memcpy(h.key, key, 32);
    h.payload_bytes = n;
    checksum(p, n, h.checksum);
    bool ok = write_all(fd, &h, sizeof h) && write_all(fd, p, n);
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok) {
        /* mkstemp makes 0600 files; a cache is readable as a directory. */
        chmod(tmp, 0644);
        if (rename(tmp, path) != 0) {
            ok = false;
            err = errno;
        }
    }
    if (!ok) {
        unlink(tmp);
        disable(d, "cannot write %s", path, err);
        goto out;
    }
    written = sizeof h + n;
    trim(d);
out:
    fe_free(d->ctx, tmp, tn);
    fe_free(d->ctx, path, pn);
    return written;
}

/* The first 8 bytes of a key in hex, for traces. */
static const char *short_key(const uint8_t key[32], char buf[17])
{
    for (int i = 0; i < 8; i++) {
        snprintf(buf + 2 * i, 3, "%02x", key[i]);
    }
    return buf;
}

int rt_disk_load(rt_disk *d, const uint8_t key[32], void **out, size_t *n)
{
    if (!rt_disk_enabled(d)) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    uint64_t t0 = fe_clock_ns();
    int r = disk_load(d, key, out, n);
    char k[17];
    fe_phase_end(d->ctx, FE_PHASE_DISK, t0, "disk.load",
                 "\"key\":\"%s\",\"hit\":%s,\"bytes\":%zu,\"ext\":\"%s\"",
                 short_key(key, k), r > 0 ? "true" : "false", *n, d->ext);
    return r;
}

uint64_t rt_disk_store(rt_disk *d, const uint8_t key[32], const void *p,
                       size_t n)
{
    if (!rt_disk_enabled(d) || n == 0) {
        return 0;
    }
    uint64_t t0 = fe_clock_ns();
    uint64_t w = disk_store(d, key, p, n);
    char k[17];
    fe_phase_end(d->ctx, FE_PHASE_DISK, t0, "disk.store",
                 "\"key\":\"%s\",\"bytes\":%llu,\"ext\":\"%s\"",
                 short_key(key, k), (unsigned long long)w, d->ext);
    return w;
}

#endif /* WEFT_HAVE_LLVM */
