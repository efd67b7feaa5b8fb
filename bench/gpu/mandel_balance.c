/*
 * bench/gpu/mandel_balance.c: how evenly the devices of a context over
 * several GPUs share bench/gpu's Mandelbrot when its pixels are dealt out
 * in pieces round robin (runtime-gpu/multi.c, "Pieces"), computed on the
 * CPU from its iteration counts, no GPU needed.
 *
 * A warp of 32 pixels costs the most iterations of its pixels (the lanes
 * wait for the slowest), so a piece's cost is the sum over its warps of
 * that most; device d's cost is the sum of its pieces q = d, d + D, ....
 * The image is run.py's: side x side pixels, x0 -2, y0 -1.25, a step of
 * 2.5 / side, at most 255 iterations of z^2 + c in f32 (the order of
 * weft_gpu.c's build_mandel; the GPU may contract to FMA, which moves a
 * few pixels' counts, not the balance).  For each device count of 2, 4
 * and 8, prints the most and least costly device against the mean, for
 * pieces of one granule of the i32 output (2 MiB: what an interleaved
 * output gives) and of 65,536 pixels (the pieces without it).
 *
 *   cc -O2 -o /tmp/mb bench/gpu/mandel_balance.c && /tmp/mb 8192
 *   (8192: a few seconds; 16384: four times that)
 */
#include <stdio.h>
#include <stdlib.h>

/* The warps' most iterations summed over each row of the image. */
static long long *row_costs(int side)
{
    long long *row = calloc((size_t)side, sizeof *row);
    if (!row) {
        return NULL;
    }
    float x0 = -2.0f, y0 = -1.25f, step = 2.5f / (float)side;
    for (int i = 0; i < side; i++) {
        float ci = y0 + step * (float)i;
        for (int j0 = 0; j0 < side; j0 += 32) {
            int most = 0;
            for (int j = j0; j < j0 + 32 && j < side; j++) {
                float cr = x0 + step * (float)j, zr = 0, zi = 0;
                int k = 0;
                while (k < 255 && zr * zr + zi * zi <= 4.0f) {
                    float nr = zr * zr - zi * zi + cr;
                    zi = 2.0f * zr * zi + ci;
                    zr = nr;
                    k++;
                }
                most = k > most ? k : most;
            }
            row[i] += most;
        }
    }
    return row;
}

/* Devices' cost with pieces of `rows` rows dealt round robin over nd:
 * the most and the least against the mean. */
static void deal(const long long *row, int side, int rows, int nd)
{
    long long dev[8] = {0}, all = 0;
    for (int i = 0; i < side; i++) {
        dev[(i / rows) % nd] += row[i];
        all += row[i];
    }
    long long hi = dev[0], lo = dev[0];
    for (int d = 1; d < nd; d++) {
        hi = dev[d] > hi ? dev[d] : hi;
        lo = dev[d] < lo ? dev[d] : lo;
    }
    double mean = (double)all / nd;
    printf("%d devices, pieces of %d rows (%d a device): most %.4f, "
           "least %.4f of the mean\n",
           nd, rows, side / rows / nd, (double)hi / mean, (double)lo / mean);
}

int main(int argc, char **argv)
{
    int side = argc > 1 ? atoi(argv[1]) : 8192;
    if (side < 64 || side % 64 != 0 || side > 65536) {
        fprintf(stderr, "usage: mandel_balance [side: 64 .. 65536, a "
                        "multiple of 64]\n");
        return 2;
    }
    long long *row = row_costs(side);
    if (!row) {
        fprintf(stderr, "mandel_balance: out of memory\n");
        return 1;
    }
    int granule = (2 << 20) / (4 * side), today = 65536 / side;
    for (int nd = 2; nd <= 8; nd *= 2) {
        if (granule > 0) {
            deal(row, side, granule, nd);
        }
        if (today > 0) {
            deal(row, side, today, nd);
        }
    }
    free(row);
    return 0;
}
