/*
 * bench/gpu/probe.h: what the standalone probes of bench/gpu share (each
 * is one C file that gcc builds against libweft.so on the GPU machine):
 * the monotonic clock in ms, the order of doubles for qsort (medians),
 * and, where the probe defines PROBE_NAME before including this, the exit
 * on a weft failure that names the probe.
 */
#ifndef PROBE_H
#define PROBE_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "weft.h"

static inline double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* For qsort: ascending doubles. */
static inline int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#ifdef PROBE_NAME
/* "PROBE_NAME: what: weft's last error" on stderr, and exit 1. */
static inline void die(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", PROBE_NAME, what, weft_last_error());
    exit(1);
}
#endif

#endif
