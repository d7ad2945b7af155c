/*
 * rng.c -- the random streams: one xoshiro256** stream per entity, seeded by
 * splitmix64 from (instance seed, entity) at reset (seer_clear_entity in
 * phases.c).  seer_rng_* are what a handler calls (seer.h), on the thread
 * running it; the stream lives in the entity's runtime record, which only
 * that thread touches during the phase.  seer_rng_seed_state is also host
 * API (seer_runtime.h), so independent ports can check the seeding.
 */
#include <math.h>

#include "base.h"
#include "errors.h"
#include "runtime.h"

void seer_rng_seed_state(uint64_t seed, uint32_t entity, uint64_t s[4])
{
    /* One splitmix64 output keyed by (seed, entity) starts the stream's
     * own splitmix64 sequence, which fills the four state words. */
    uint64_t x = seed ^ (0xD1B54A32D192ED03ull * ((uint64_t)entity + 1u));
    uint64_t sm = seer_splitmix64_next(&x);
    for (int i = 0; i < 4; i++)
        s[i] = seer_splitmix64_next(&sm);
    if (!(s[0] | s[1] | s[2] | s[3]))
        s[0] = 1;
}

static inline uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t xoshiro_next(uint64_t s[4])
{
    const uint64_t result = rotl64(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* The stream of the context's entity.  boundary and global_state run for
 * the instance, with no entity and so no stream: a draw there is a contract
 * violation (reported when the call ends) and gets a fixed stand-in state. */
static uint64_t *stream_of(seer_ctx *ctx)
{
    if (__builtin_expect(ctx->rec != NULL, 1))
        return ctx->rec->rng;
    static _Thread_local uint64_t none[4];
    none[0] = 1;
    none[1] = none[2] = none[3] = 0;
    seer_worker_error_local(ctx->w, SEER_E_PHASE,
                            "contract violation (random draw without an entity) in model "
                            "'%s': seer_rng_* called in the instance-level %s hook of instance "
                            "%u: only init, act, handle, observe and publish have an entity, "
                            "and with it a stream",
                            ctx->rt->model->name, ctx->phase == PHASE_BOUNDARY ? "boundary" : "?",
                            ctx->inst_idx);
    return none;
}

uint64_t seer_rng_u64(seer_ctx *ctx)
{
    return xoshiro_next(stream_of(ctx));
}

double seer_rng_uniform(seer_ctx *ctx)
{
    return ((double)(xoshiro_next(stream_of(ctx)) >> 11) + 0.5) * 0x1.0p-53;
}

double seer_rng_exponential(seer_ctx *ctx, double mean)
{
    return -mean * log(seer_rng_uniform(ctx));
}

/* seer_rng_below(ctx, 0): [0, 0) holds no value, and 0 came back, silently
 * (a handler's "% n" or table index then went astray): the call fails the
 * handler's call as seer_fail_step does (a ModelError naming the entity);
 * the draw is made, as for any n, so the stream moves on alike. */
static uint32_t rng_below_empty(seer_ctx *ctx)
{
    (void)xoshiro_next(stream_of(ctx));
    seer_worker_error_local(ctx->w, SEER_E_MODEL,
                            "model '%s': seer_rng_below(ctx, 0) for entity %u of instance %u "
                            "at t=%.17g: the range [0, 0) holds no value (n must be >= 1)",
                            ctx->rt->model->name, ctx->self, ctx->inst_idx, ctx->now);
    return 0;
}

uint32_t seer_rng_below(seer_ctx *ctx, uint32_t n)
{
    if (__builtin_expect(n == 0, 0))
        return rng_below_empty(ctx);
    return (uint32_t)(((xoshiro_next(stream_of(ctx)) >> 32) * (uint64_t)n) >> 32);
}
