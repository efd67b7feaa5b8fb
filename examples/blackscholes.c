/*
 * examples/blackscholes.c: European call and put prices by Black-Scholes.
 *
 * Each option is (price S, strike X, years T); with the riskless rate r and
 * the volatility v,
 *   d1 = (log (S / X) + (r + v^2 / 2) T) / (v sqrt T),  d2 = d1 - v sqrt T
 *   call = S N(d1) - X e^(-rT) N(d2)
 *   put  = X e^(-rT) (1 - N(d2)) - S (1 - N(d1))
 * where N, the normal cumulative distribution, is the polynomial
 * approximation of Abramowitz and Stegun (26.2.17) used in the Accelerate
 * papers.  The weft program is one zipWith3 in f32 whose function returns
 * the pair (call, put), so the result is one array of pairs (two buffers).
 * It runs on the default backend (WEFT_BACKEND may choose another) and is
 * compared with the same formulas in C double precision.  Exits 0 on
 * success.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define N 100000
#define RISKFREE 0.02
#define VOLATILITY 0.30
#define RSQRT2PI 0.39894228040143267793994605993438

static const double coeff[5] = {0.31938153, -0.356563782, 1.781477937,
                                -1.821255978, 1.330274429};

/* N(d) in C, double precision. */
static double cnd(double d)
{
    double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
    double poly = coeff[4];
    for (int i = 3; i >= 0; i--) {
        poly = coeff[i] + k * poly;
    }
    double c = RSQRT2PI * exp(-0.5 * d * d) * (k * poly);
    return d > 0 ? 1.0 - c : c;
}

static void reference(double s, double x, double t, double *call, double *put)
{
    double v_sqrtt = VOLATILITY * sqrt(t);
    double d1 =
        (log(s / x) + (RISKFREE + 0.5 * VOLATILITY * VOLATILITY) * t) / v_sqrtt;
    double d2 = d1 - v_sqrtt;
    double c1 = cnd(d1), c2 = cnd(d2);
    double x_exprt = x * exp(-RISKFREE * t);
    *call = s * c1 - x_exprt * c2;
    *put = x_exprt * (1.0 - c2) - s * (1.0 - c1);
}

/* N(d) as a weft term, f32. */
static weft_exp *cnd_term(weft_program *p, weft_exp *d)
{
    weft_exp *k =
        weft_fdiv(weft_f32(p, 1),
                  weft_add(weft_f32(p, 1),
                           weft_mul(weft_f32(p, 0.2316419f), weft_abs(d))));
    weft_exp *poly = weft_f32(p, (float)coeff[4]);
    for (int i = 3; i >= 0; i--) {
        poly = weft_add(weft_f32(p, (float)coeff[i]), weft_mul(k, poly));
    }
    weft_exp *c = weft_mul(
        weft_mul(weft_f32(p, (float)RSQRT2PI),
                 weft_fexp(weft_mul(weft_f32(p, -0.5f), weft_mul(d, d)))),
        weft_mul(k, poly));
    return weft_cond(weft_gt(d, weft_f32(p, 0)), weft_sub(weft_f32(p, 1), c),
                     c);
}

/* zipWith3 (\s x t -> (call, put)) prices strikes years. */
static weft_acc *black_scholes(weft_program *p, weft_acc *prices,
                               weft_acc *strikes, weft_acc *years)
{
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_exp *s = weft_arg(f, 0), *x = weft_arg(f, 1), *t = weft_arg(f, 2);
    weft_exp *r = weft_f32(p, (float)RISKFREE);
    weft_exp *v = weft_f32(p, (float)VOLATILITY);
    weft_exp *v_sqrtt = weft_mul(v, weft_sqrt(t));
    weft_exp *drift = weft_add(r, weft_mul(weft_f32(p, 0.5f), weft_mul(v, v)));
    weft_exp *d1 = weft_fdiv(
        weft_add(weft_log(weft_fdiv(s, x)), weft_mul(drift, t)), v_sqrtt);
    weft_exp *d2 = weft_sub(d1, v_sqrtt);
    weft_exp *c1 = cnd_term(p, d1), *c2 = cnd_term(p, d2);
    weft_exp *x_exprt = weft_mul(x, weft_fexp(weft_mul(weft_neg(r), t)));
    weft_exp *one = weft_f32(p, 1);
    weft_exp *res[2] = {weft_sub(weft_mul(s, c1), weft_mul(x_exprt, c2)),
                        weft_sub(weft_mul(x_exprt, weft_sub(one, c2)),
                                 weft_mul(s, weft_sub(one, c1)))};
    weft_fun_return(f, weft_tuple(p, 2, res));
    return weft_zipwith3(f, prices, strikes, years);
}

/* A deterministic pseudo-random number in [0, 1). */
static double rnd(unsigned long long *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 9007199254740992.0;
}

int main(void)
{
    int rc = EXIT_FAILURE;
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    weft_array *in[3] = {NULL, NULL, NULL}, *out[1] = {NULL};
    float *opt[3] = {malloc(sizeof(float) * N), malloc(sizeof(float) * N),
                     malloc(sizeof(float) * N)};
    if (!opt[0] || !opt[1] || !opt[2]) {
        fprintf(stderr, "blackscholes: out of memory\n");
        goto done;
    }
    unsigned long long seed = 2024;
    for (int i = 0; i < N; i++) {
        opt[0][i] = (float)(5 + 25 * rnd(&seed));      /* price 5 .. 30 */
        opt[1][i] = (float)(1 + 99 * rnd(&seed));      /* strike 1 .. 100 */
        opt[2][i] = (float)(0.25 + 9.75 * rnd(&seed)); /* 0.25 .. 10 years */
    }

    weft_config cfg = weft_config_default();
    if (weft_context_create(&cfg, &ctx) != WEFT_OK) {
        goto fail;
    }
    int64_t n = N;
    for (int k = 0; k < 3; k++) {
        const void *d[1] = {opt[k]};
        if (weft_array_from_host(ctx, WEFT_F32, 1, &n, d, &in[k]) != WEFT_OK) {
            goto fail;
        }
    }
    if (weft_program_create(ctx, &p) != WEFT_OK) {
        goto fail;
    }
    weft_acc *prices = weft_param(p, WEFT_F32, 1);
    weft_acc *strikes = weft_param(p, WEFT_F32, 1);
    weft_acc *years = weft_param(p, WEFT_F32, 1);
    weft_acc *r = black_scholes(p, prices, strikes, years);
    if (weft_compile(p, &r, 1, &exe) != WEFT_OK ||
        weft_run(exe, in, 3, out, 1) != WEFT_OK) {
        goto fail;
    }
    const float *call = weft_array_data(out[0], 0);
    const float *put = weft_array_data(out[0], 1);
    if (!call || !put) {
        goto fail;
    }

    printf("%-8s %8s %8s %6s %10s %10s\n", "option", "price", "strike", "years",
           "call", "put");
    double max_err = 0;
    for (int i = 0; i < N; i++) {
        double rc_call, rc_put;
        reference(opt[0][i], opt[1][i], opt[2][i], &rc_call, &rc_put);
        double e1 = fabs(call[i] - rc_call) / fmax(1.0, fabs(rc_call));
        double e2 = fabs(put[i] - rc_put) / fmax(1.0, fabs(rc_put));
        max_err = fmax(max_err, fmax(e1, e2));
        if (i < 5) {
            printf("%-8d %8.3f %8.3f %6.2f %10.4f %10.4f\n", i, opt[0][i],
                   opt[1][i], opt[2][i], call[i], put[i]);
        }
    }
    printf("%d options; max error vs C double precision %.2e "
           "(relative above 1, absolute below)\n",
           N, max_err);
    if (max_err > 1e-3) {
        fprintf(stderr, "blackscholes: error too large\n");
        goto done;
    }
    rc = EXIT_SUCCESS;
    goto done;

fail:
    fprintf(stderr, "blackscholes: %s\n", weft_last_error());
done:
    weft_array_release(out[0]);
    weft_executable_free(exe);
    weft_program_free(p);
    for (int k = 0; k < 3; k++) {
        weft_array_release(in[k]);
        free(opt[k]);
    }
    weft_context_free(ctx);
    return rc;
}
