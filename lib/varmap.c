/*
 * lib/varmap.c: a small map from variable ids to numbers, for tables that
 * one kernel's functions fill.
 *
 * A kernel's preparation and its cache key keep a little per variable
 * (bound inside the functions, already an item, a canonical number).  A
 * table indexed by id costs the program's variable count per kernel,
 * which a program of 10^5 small kernels (and 2 * 10^5 variables) pays
 * 10^5 times: an mmap, page faults and an munmap per kernel were most of
 * its compile time.  This map costs what is put in: open addressing over
 * id + 1 (0 marks a free slot), doubled when half full, in the caller's
 * arena.  Values are nonzero; 0 means absent.
 */
#include <string.h>

#include "fe.h"

void fe_varmap_init(fe_varmap *m, fe_arena *ar)
{
    memset(m, 0, sizeof *m);
    m->ar = ar;
}

static uint32_t slot_of(uint32_t key, uint32_t cap)
{
    return (key * 0x9e3779b1u) >> 7 & (cap - 1);
}

uint32_t fe_varmap_get(const fe_varmap *m, uint32_t id)
{
    if (!m->n) {
        return 0;
    }
    uint32_t key = id + 1;
    for (uint32_t h = slot_of(key, m->cap);; h = (h + 1) & (m->cap - 1)) {
        if (m->key[h] == key) {
            return m->val[h];
        }
        if (m->key[h] == 0) {
            return 0;
        }
    }
}

bool fe_varmap_put(fe_varmap *m, uint32_t id, uint32_t val)
{
    if (2 * (m->n + 1) > m->cap) {
        uint32_t cap = m->cap ? 2 * m->cap : 32;
        uint32_t *key = fe_arena_alloc(m->ar, sizeof *key * cap);
        uint32_t *v = fe_arena_alloc(m->ar, sizeof *v * cap);
        if (!key || !v) {
            return false;
        }
        for (uint32_t i = 0; i < m->cap; i++) {
            if (m->key[i]) {
                uint32_t h = slot_of(m->key[i], cap);
                while (key[h]) {
                    h = (h + 1) & (cap - 1);
                }
                key[h] = m->key[i];
                v[h] = m->val[i];
            }
        }
        m->key = key;
        m->val = v;
        m->cap = cap;
    }
    uint32_t k = id + 1;
    uint32_t h = slot_of(k, m->cap);
    while (m->key[h] && m->key[h] != k) {
        h = (h + 1) & (m->cap - 1);
    }
    m->n += m->key[h] == 0;
    m->key[h] = k;
    m->val[h] = val;
    return true;
}
