/*
 * model.c -- the model boundary, as a host sees it: checking a model table,
 * filling and validating its configuration through its parameter table,
 * running describe, agent names and space bounds.  Called by the host:
 * seer_runtime_create, and the Python layer (_runtime.NativeModel) before
 * any runtime exists.  Nothing here runs during a step but
 * seer_model_event_name, which messages use.  Every function may be called
 * from any thread (they touch only their arguments).  The messages come
 * from seer_fail_buf (errors.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "errors.h"

static const char *kind_name(seer_kind k)
{
    switch (k) {
    case SEER_KIND_BOOL: return "bool";
    case SEER_KIND_INT: return "int";
    case SEER_KIND_UINT: return "unsigned int";
    case SEER_KIND_FLOAT: return "float";
    default: return "?";
    }
}

static int valid_layout(seer_kind kind, uint32_t size)
{
    switch (kind) {
    case SEER_KIND_BOOL: return size == 1;
    case SEER_KIND_INT:
    case SEER_KIND_UINT: return size == 1 || size == 2 || size == 4 || size == 8;
    case SEER_KIND_FLOAT: return size == 4 || size == 8;
    default: return 0;
    }
}

static int valid_name(const char *s)
{
    if (!s || !*s || strlen(s) >= SEER_NAME_LEN)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

/* The range of values a member of this kind and size can hold. */
static void type_range(seer_kind kind, uint32_t size, double *lo, double *hi)
{
    switch (kind) {
    case SEER_KIND_BOOL: *lo = 0; *hi = 1; break;
    case SEER_KIND_INT:
        *hi = ldexp(1.0, (int)size * 8 - 1) - 1.0;
        *lo = -ldexp(1.0, (int)size * 8 - 1);
        break;
    case SEER_KIND_UINT:
        *lo = 0;
        *hi = ldexp(1.0, (int)size * 8) - 1.0;
        break;
    default:
        *lo = size == 4 ? -3.4028234663852886e38 : -1.7976931348623157e308;
        *hi = -*lo;
        break;
    }
}

/* A parameter's effective range: its declared one, or its type's. */
static void param_range(const seer_param *p, double *lo, double *hi)
{
    if (p->lo == 0.0 && p->hi == 0.0) {
        type_range(p->kind, p->size, lo, hi);
        return;
    }
    *lo = p->lo;
    *hi = p->hi;
}

/* "must be in [lo, hi]" with the exclusive end and +inf spelled out. */
static void range_text(const seer_param *p, char *out, size_t n)
{
    double lo, hi;
    param_range(p, &lo, &hi);
    char a[32], b[32];
    seer_fmt_double(a, lo);
    seer_fmt_double(b, hi);
    const char *inf = (p->flags & SEER_P_INF) ? " or inf" : "";
    const char *none = (p->flags & SEER_P_NONE) ? " (or None)" : "";
    if (p->kind == SEER_KIND_BOOL)
        snprintf(out, n, "must be a bool%s", none);
    else if (p->lo == 0.0 && p->hi == 0.0 && p->kind == SEER_KIND_FLOAT)
        snprintf(out, n, "must be finite%s%s", inf, none);
    else
        snprintf(out, n, "must be in %c%s, %s]%s%s", (p->flags & SEER_P_GT) ? '(' : '[', a, b,
                 inf, none);
}

static const seer_param *find_param(const seer_model *m, const char *name)
{
    for (uint32_t i = 0; i < m->num_params; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return &m->params[i];
    return NULL;
}

static void store(const seer_param *p, void *config, uint32_t index, double f, int64_t i,
                  uint64_t u)
{
    unsigned char *dst = (unsigned char *)config + p->offset + (size_t)index * p->size;
    switch (p->kind) {
    case SEER_KIND_BOOL: {
        _Bool b = u != 0;
        memcpy(dst, &b, 1);
        break;
    }
    case SEER_KIND_FLOAT:
        if (p->size == 4) {
            float x = (float)f;
            memcpy(dst, &x, 4);
        } else {
            memcpy(dst, &f, 8);
        }
        break;
    case SEER_KIND_INT:
        switch (p->size) {
        case 1: { int8_t x = (int8_t)i; memcpy(dst, &x, 1); break; }
        case 2: { int16_t x = (int16_t)i; memcpy(dst, &x, 2); break; }
        case 4: { int32_t x = (int32_t)i; memcpy(dst, &x, 4); break; }
        default: memcpy(dst, &i, 8); break;
        }
        break;
    default:
        switch (p->size) {
        case 1: { uint8_t x = (uint8_t)u; memcpy(dst, &x, 1); break; }
        case 2: { uint16_t x = (uint16_t)u; memcpy(dst, &x, 2); break; }
        case 4: { uint32_t x = (uint32_t)u; memcpy(dst, &x, 4); break; }
        default: memcpy(dst, &u, 8); break;
        }
        break;
    }
}

/* Store a value given as a double (defaults and "not set" values). */
static void store_double(const seer_param *p, void *config, uint32_t index, double d)
{
    const int finite = isfinite(d);
    const int64_t i = finite && d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : 0;
    const uint64_t u = !finite || d < 0 ? (p->kind == SEER_KIND_UINT && d > 0 ? UINT64_MAX : 0)
                       : d >= 1.8e19 ? UINT64_MAX
                                     : (uint64_t)d;
    store(p, config, index, d, i, u);
}

/* Is the default the "not set" value (a derived default)? */
static int default_is_none(const seer_param *p)
{
    return (p->flags & SEER_P_NONE) && (p->def == p->none || (isnan(p->def) && isnan(p->none)));
}

/* The table's API version is this runtime's. */
static int check_version(const seer_model *m, const char *n, char *err, size_t errlen)
{
    if (m->api_version == SEER_API_VERSION)
        return SEER_OK;
    if (m->api_version == 0)
        return seer_fail_buf(err, errlen, SEER_E_VERSION,
                             "model '%s': its table has no API version; add "
                             "`.api_version = SEER_API_VERSION` to the seer_model "
                             "initializer (this runtime implements version %d)",
                             n, SEER_API_VERSION);
    return seer_fail_buf(err, errlen, SEER_E_VERSION,
                         "model '%s' was built against seer model API version %u, but "
                         "this runtime implements version %d: compile it against this "
                         "seer_env's seer.h (seer-env build PATH does) and set "
                         "`.api_version = SEER_API_VERSION`, the macro, not a number",
                         n, m->api_version, SEER_API_VERSION);
}

/* The required handlers are there. */
static int check_handlers(const seer_model *m, const char *n, char *err, size_t errlen)
{
    const struct {
        const void *fn;
        const char *what;
    } req[] = {{(const void *)m->describe, "describe"},
               {(const void *)m->handle, "handle"},
               {(const void *)m->observe, "observe"}};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!req[i].fn)
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s': the %s handler is missing (NULL); describe, "
                                 "handle and observe are required",
                                 n, req[i].what);
    return SEER_OK;
}

/* Parameter i: a unique valid name, a layout inside the configuration, a
 * range its type holds, and a default inside the range. */
static int check_param(const seer_model *m, const char *n, uint32_t i, char *err,
                       size_t errlen)
{
    const seer_param *p = &m->params[i];
    if (!valid_name(p->name))
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': parameter %u has an invalid name", n, i);
    for (uint32_t j = 0; j < i; j++)
        if (strcmp(m->params[j].name, p->name) == 0)
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s': parameter '%s' is declared twice", n, p->name);
    if (!valid_layout(p->kind, p->size) || p->count < 1 || (p->inner && p->count % p->inner))
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': parameter '%s' has an invalid kind, size or "
                             "count (declare it with SEER_MEMBER)",
                             n, p->name);
    if ((uint64_t)p->offset + (uint64_t)p->size * p->count > m->config_size)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': parameter '%s' lies outside the configuration "
                             "struct (config_size=%zu)",
                             n, p->name, m->config_size);
    double lo, hi, tlo, thi;
    param_range(p, &lo, &hi);
    type_range(p->kind, p->size, &tlo, &thi);
    if (!(lo <= hi) || lo < tlo || hi > thi)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': parameter '%s' has an invalid range for a %u-byte "
                             "%s",
                             n, p->name, p->size, kind_name(p->kind));
    if (default_is_none(p))
        return SEER_OK;
    if (p->kind != SEER_KIND_FLOAT && isfinite(p->def) && p->def != floor(p->def))
        /* the cast below would truncate it: .def = 8.5 read as 8 */
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': the default of integer parameter '%s' is %g, not a "
                             "whole number",
                             n, p->name, p->def);
    char msg[SEER_ERRLEN];
    void *scratch = calloc(1, m->config_size ? m->config_size : 1);
    if (!scratch)
        return seer_fail_buf(err, errlen, SEER_E_NOMEM, "out of memory");
    int rc = p->kind == SEER_KIND_FLOAT
                 ? seer_config_set_f64(m, scratch, p->name, 0, p->def, msg, sizeof msg)
             : p->kind == SEER_KIND_UINT
                 ? seer_config_set_u64(m, scratch, p->name, 0,
                                       p->def >= 0 ? (uint64_t)p->def : UINT64_MAX, msg,
                                       sizeof msg)
                 : seer_config_set_i64(m, scratch, p->name, 0, (int64_t)p->def, msg,
                                       sizeof msg);
    free(scratch);
    if (rc != SEER_OK)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': the default of parameter '%s' is out of its "
                             "range (%s)",
                             n, p->name, msg);
    return SEER_OK;
}

/* Every state field has a valid name and layout. */
static int check_state_fields(const seer_model *m, const char *n, char *err, size_t errlen)
{
    if (m->num_state_fields && !m->state_fields)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': num_state_fields=%u but state_fields is NULL", n,
                             m->num_state_fields);
    for (uint32_t i = 0; i < m->num_state_fields; i++) {
        const seer_field *f = &m->state_fields[i];
        if (!valid_name(f->name) || !valid_layout(f->kind, f->size) || f->count < 1 ||
            (f->inner && f->count % f->inner))
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s': state field %u is invalid (declare it with "
                                 "SEER_MEMBER)",
                                 n, i);
    }
    return SEER_OK;
}

int seer_model_check(const seer_model *m, char *err, size_t errlen)
{
    if (!m)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "model table is NULL");
    const char *n = m->name && *m->name ? m->name : "(unnamed)";
    int rc = check_version(m, n, err, errlen);
    if (rc != SEER_OK)
        return rc;
    if (!valid_name(m->name))
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model name %s%s%s is invalid: use 1-63 letters, digits, '_', "
                             "'-' or '.'",
                             m->name ? "'" : "", m->name ? m->name : "NULL", m->name ? "'" : "");
    rc = check_handlers(m, n, err, errlen);
    if (rc != SEER_OK)
        return rc;
    if (m->num_params && !m->params)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': num_params=%u but params is NULL", n, m->num_params);
    for (uint32_t i = 0; i < m->num_params && rc == SEER_OK; i++)
        rc = check_param(m, n, i, err, errlen);
    if (rc != SEER_OK)
        return rc;
    return check_state_fields(m, n, err, errlen);
}

static int lookup(const seer_model *m, const char *name, uint32_t index, const seer_param **out,
                  char *err, size_t errlen)
{
    const seer_param *p = name ? find_param(m, name) : NULL;
    if (!p)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG, "%s: unknown parameter '%s'", m->name,
                             name ? name : "NULL");
    if (index >= p->count)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "%s: %s has %u element(s); index %u is out of range", m->name,
                             name, p->count, index);
    *out = p;
    return SEER_OK;
}

static int out_of_range(const seer_model *m, const seer_param *p, const char *value, char *err,
                        size_t errlen)
{
    char r[128];
    range_text(p, r, sizeof r);
    return seer_fail_buf(err, errlen, SEER_E_CONFIG, "%s: %s=%s %s", m->name, p->name, value, r);
}

/* Is an exact value v within p's range? */
static int in_range(const seer_param *p, double v)
{
    double lo, hi;
    param_range(p, &lo, &hi);
    if ((p->flags & SEER_P_GT) ? !(v > lo) : !(v >= lo))
        return 0;
    return v <= hi;
}

int seer_config_set_f64(const seer_model *m, void *config, const char *name, uint32_t index,
                        double v, char *err, size_t errlen)
{
    const seer_param *p;
    if (lookup(m, name, index, &p, err, errlen))
        return SEER_E_CONFIG;
    char buf[32];
    if (p->kind != SEER_KIND_FLOAT) {
        /* integral floats are accepted for integer parameters */
        if (!(v == floor(v)) || !isfinite(v))
            return seer_fail_buf(err, errlen, SEER_E_CONFIG, "%s: %s=%s must be %s", m->name,
                                 p->name, seer_fmt_double(buf, v),
                                 p->kind == SEER_KIND_BOOL ? "a bool" : "an integer");
        if (!in_range(p, v))
            return out_of_range(m, p, seer_fmt_double(buf, v), err, errlen);
        store(p, config, index, v, (int64_t)v, v >= 0 ? (uint64_t)v : 0);
        return SEER_OK;
    }
    const int inf_ok = (p->flags & SEER_P_INF) && v == HUGE_VAL;
    if (isnan(v) || (!isfinite(v) && !inf_ok) || (!inf_ok && !in_range(p, v)))
        return out_of_range(m, p, seer_fmt_double(buf, v), err, errlen);
    if (p->size == 4 && !inf_ok && fabs(v) > 3.4028234663852886e38)
        return out_of_range(m, p, seer_fmt_double(buf, v), err, errlen);
    store(p, config, index, v, 0, 0);
    return SEER_OK;
}

int seer_config_set_i64(const seer_model *m, void *config, const char *name, uint32_t index,
                        int64_t v, char *err, size_t errlen)
{
    if (v >= 0)
        return seer_config_set_u64(m, config, name, index, (uint64_t)v, err, errlen);
    const seer_param *p;
    if (lookup(m, name, index, &p, err, errlen))
        return SEER_E_CONFIG;
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    if (p->kind == SEER_KIND_FLOAT)
        return seer_config_set_f64(m, config, name, index, (double)v, err, errlen);
    if (p->kind != SEER_KIND_INT || !in_range(p, (double)v))
        return out_of_range(m, p, buf, err, errlen);
    double lo, hi;
    param_range(p, &lo, &hi);
    if (v < (int64_t)lo) /* exact where the double comparison rounds */
        return out_of_range(m, p, buf, err, errlen);
    store(p, config, index, (double)v, v, 0);
    return SEER_OK;
}

int seer_config_set_u64(const seer_model *m, void *config, const char *name, uint32_t index,
                        uint64_t v, char *err, size_t errlen)
{
    const seer_param *p;
    if (lookup(m, name, index, &p, err, errlen))
        return SEER_E_CONFIG;
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    if (p->kind == SEER_KIND_FLOAT)
        return seer_config_set_f64(m, config, name, index, (double)v, err, errlen);
    if (!in_range(p, (double)v))
        return out_of_range(m, p, buf, err, errlen);
    /* Exact bound checks where the double comparison rounds (above 2^53). */
    double lo, hi;
    param_range(p, &lo, &hi);
    if (hi < 18446744073709551615.0 && v > (uint64_t)hi)
        return out_of_range(m, p, buf, err, errlen);
    if (p->kind == SEER_KIND_INT && v > (uint64_t)INT64_MAX)
        return out_of_range(m, p, buf, err, errlen);
    store(p, config, index, (double)v, (int64_t)v, v);
    return SEER_OK;
}

int seer_config_set_none(const seer_model *m, void *config, const char *name, uint32_t index,
                         char *err, size_t errlen)
{
    const seer_param *p;
    if (lookup(m, name, index, &p, err, errlen))
        return SEER_E_CONFIG;
    if (!(p->flags & SEER_P_NONE)) {
        char r[128];
        range_text(p, r, sizeof r);
        return seer_fail_buf(err, errlen, SEER_E_CONFIG, "%s: %s=None is not accepted: it %s",
                             m->name, p->name, r);
    }
    store_double(p, config, index, p->none);
    return SEER_OK;
}

void seer_config_defaults(const seer_model *m, void *config)
{
    if (m->config_size)
        memset(config, 0, m->config_size);
    for (uint32_t i = 0; i < m->num_params; i++) {
        const seer_param *p = &m->params[i];
        for (uint32_t k = 0; k < p->count; k++)
            store_double(p, config, k, p->def);
    }
}

static int check_sizes(const seer_model *m, const seer_sizes *s, char *err, size_t errlen)
{
    const char *n = m->name;
    if (s->num_entities == 0 || s->num_entities > SEER_MAX_ENTITIES)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "model '%s': num_entities=%u must be in [1, %u]", n,
                             s->num_entities, SEER_MAX_ENTITIES);
    if (s->num_agents == 0 || s->num_agents > s->num_entities)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "model '%s': num_agents=%u must be in [1, num_entities=%u]", n,
                             s->num_agents, s->num_entities);
    if (!(s->lookahead >= 0.0) || !isfinite(s->lookahead))
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "model '%s': lookahead=%g must be finite and >= 0", n,
                             s->lookahead);
    if (!(s->step_duration > 0.0) || !isfinite(s->step_duration))
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "model '%s': step_duration=%g must be finite and > 0", n,
                             s->step_duration);
    /* the actions and info names: checked per group (describe_groups) */
    const struct {
        uint32_t v, max;
        const char *what;
    } lim[] = {{s->obs_dim, 1u << 24, "obs_dim"},         {s->info_dim, 1u << 16, "info_dim"},
               {s->state_dim, 1u << 28, "state_dim"},     {s->entity_size, 1u << 24, "entity_size"},
               {s->payload_size, 1u << 16, "payload_size"},
               {s->snapshot_size, 1u << 20, "snapshot_size"},
               {s->instance_size, 1u << 28, "instance_size"}};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].v > lim[i].max)
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "model '%s': %s=%u is above its limit %u", n, lim[i].what,
                                 lim[i].v, lim[i].max);
    for (uint32_t i = 0; i < m->num_state_fields; i++) {
        const seer_field *f = &m->state_fields[i];
        if ((uint64_t)f->offset + (uint64_t)f->size * f->count > s->entity_size)
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s': state field '%s' lies outside the entity state "
                                 "(entity_size=%u)",
                                 n, f->name, s->entity_size);
    }
    return SEER_OK;
}

/* ---- agent groups ----------------------------------------------------------- */

/* Is the model's group hook what describes its groups? */
static int hooked_groups(const seer_model *m, const seer_sizes *s)
{
    return m->group && s->num_groups >= 1;
}

static int valid_ident(const char *s)
{
    if (!s || !*s || strlen(s) >= SEER_NAME_LEN - 12) /* room for "_<index>" */
        return 0;
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return 0;
    return 1;
}

int seer_model_group(const seer_model *m, const void *config, const seer_sizes *s, uint32_t g,
                     seer_group *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!hooked_groups(m, s)) {
        if (g != 0)
            return seer_fail_buf(err, errlen, SEER_E_ARG,
                                 "model '%s' has one group: group %u does not exist", m->name, g);
        out->name = "agents";
        out->count = s->num_agents;
        out->obs_dim = s->obs_dim;
        out->action_kind = s->action_kind;
        out->action_dim = s->action_dim;
        out->action_n = s->action_n;
        out->action_low = s->action_low;
        out->action_high = s->action_high;
        out->info_dim = s->info_dim;
        out->info_names = m->info_names;
        return SEER_OK;
    }
    if (g >= s->num_groups)
        return seer_fail_buf(err, errlen, SEER_E_ARG, "model '%s': group %u of %u does not exist",
                             m->name, g, s->num_groups);
    char msg[SEER_ERRLEN] = "";
    if (m->group(config, g, out, msg, sizeof msg) != 0)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG, "model '%s': group %u: %s", m->name, g,
                             msg[0] ? msg : "the group hook failed (it gave no reason)");
    return SEER_OK;
}

int seer_model_action_nvec(const seer_model *m, const void *config, const seer_sizes *s,
                           uint32_t g, const seer_group *grp, int32_t *nvec, uint64_t *total,
                           char *err, size_t errlen)
{
    (void)s;
    *total = 0;
    if (grp->action_kind != SEER_ACTION_MULTI_DISCRETE)
        return SEER_OK;
    if (!m->action_nvec)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': group '%s' has multi-discrete actions but the model "
                             "has no action_nvec hook (add .action_nvec, which gives the number "
                             "of choices of each of the %u components)",
                             m->name, grp->name, grp->action_dim);
    memset(nvec, 0, grp->action_dim * sizeof *nvec);
    m->action_nvec(config, g, nvec);
    for (uint32_t j = 0; j < grp->action_dim; j++) {
        if (nvec[j] < 1)
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "model '%s': group '%s': action_nvec gave %d choices for "
                                 "component %u (each component needs >= 1)",
                                 m->name, grp->name, (int)nvec[j], j);
        *total += (uint64_t)nvec[j];
    }
    return SEER_OK;
}

uint64_t seer_model_group_choices(const seer_group *g, uint64_t nvec_total)
{
    return g->action_kind == SEER_ACTION_DISCRETE         ? (uint64_t)g->action_n
           : g->action_kind == SEER_ACTION_MULTI_DISCRETE ? nvec_total
                                                          : 0;
}

/* One group on its own: a name, agents, an observation and an action of a
 * known kind within the limits, named info values. */
static int check_group(const seer_model *m, uint32_t g, const seer_group *x, int hooked,
                       char *err, size_t errlen)
{
    /* "model 'm': " or "model 'm': group 'g': " before every message */
    char pre[2 * SEER_NAME_LEN + 32];
    if (hooked) {
        if (!valid_ident(x->name))
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "model '%s': group %u has %s name%s%s%s: use 1-%d letters, "
                                 "digits and '_', not starting with a digit",
                                 m->name, g, x->name ? "an invalid" : "no", x->name ? " '" : "",
                                 x->name ? x->name : "", x->name ? "'" : "", SEER_NAME_LEN - 13);
        snprintf(pre, sizeof pre, "model '%s': group '%s': ", m->name, x->name);
        if (x->count < 1)
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "%scount=0 (a group needs >= 1 agent)", pre);
        if (x->obs_dim < 1)
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "%sobs_dim=0 (a group's observation needs >= 1 element)", pre);
    } else {
        snprintf(pre, sizeof pre, "model '%s': ", m->name);
        if (x->obs_dim < 1) /* as a group's: an empty Box suits no learner */
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "%sobs_dim=0 (an observation needs >= 1 element)", pre);
    }
    switch (x->action_kind) {
    case SEER_ACTION_DISCRETE:
        if (x->action_dim != 1 || x->action_n < 1)
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "%sdiscrete actions need action_dim=1 and action_n>=1 (got %u "
                                 "and %d)",
                                 pre, x->action_dim, (int)x->action_n);
        break;
    case SEER_ACTION_BOX:
        if (x->action_dim < 1 || x->action_dim > (1u << 16) || !(x->action_low <= x->action_high))
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "%sbox actions need 1 <= action_dim <= 65536 and low <= high",
                                 pre);
        break;
    case SEER_ACTION_MULTI_DISCRETE:
        if (x->action_dim < 1 || x->action_dim > SEER_MAX_COMPONENTS)
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "%smulti-discrete actions need 1 <= action_dim (components) "
                                 "<= %d, got %u",
                                 pre, SEER_MAX_COMPONENTS, x->action_dim);
        break;
    default:
        return seer_fail_buf(err, errlen, SEER_E_CONFIG, "%sunknown action kind %d", pre,
                             (int)x->action_kind);
    }
    if (x->obs_dim > (1u << 24) || x->info_dim > (1u << 16))
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "%sobs_dim=%u or info_dim=%u is above its limit (%u, %u)", pre,
                             x->obs_dim, x->info_dim, 1u << 24, 1u << 16);
    if (x->info_dim && !x->info_names)
        return seer_fail_buf(err, errlen, SEER_E_MODEL, "%sinfo_dim=%u but info_names is NULL",
                             pre, x->info_dim);
    for (uint32_t i = 0; x->info_names && i < x->info_dim; i++)
        if (!x->info_names[i] || !valid_name(x->info_names[i]))
            return seer_fail_buf(err, errlen, SEER_E_MODEL, "%sinfo name %u is missing or invalid",
                                 pre, i);
    return SEER_OK;
}

/* Describe every group, check each and all together, and set the sizes the
 * runtime derives from them: the agent rows' strides (largest group's),
 * group 0's action in the flat members, the mask row. */
static int describe_groups(const seer_model *m, const void *config, seer_sizes *s, char *err,
                           size_t errlen)
{
    const char *n = m->name;
    if (s->num_groups > SEER_MAX_GROUPS)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                             "model '%s': num_groups=%u is above its limit %d", n, s->num_groups,
                             SEER_MAX_GROUPS);
    if (s->num_groups > 1 && !m->group)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': describe set num_groups=%u but the model has no group "
                             "hook (add .group, which describes each group)",
                             n, s->num_groups);
    const int hooked = hooked_groups(m, s);
    /* one group from the sizes; a model with a group hook keeps the 0 its
     * describe gave (1 would make the hook describe the group from here on:
     * create.c, the agents' names and the bounds ask hooked_groups again) */
    if (!hooked && !m->group)
        s->num_groups = 1;
    const uint32_t ngroups = s->num_groups ? s->num_groups : 1;
    if (hooked && m->obs_bounds)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': a model with groups gives its observation bounds per "
                             "group: use .group_obs_bounds instead of .obs_bounds",
                             n);
    if (hooked && m->info_names)
        return seer_fail_buf(err, errlen, SEER_E_MODEL,
                             "model '%s': a model with groups names its info values per group "
                             "(seer_group.info_names): leave .info_names out",
                             n);
    seer_group x[SEER_MAX_GROUPS];
    uint64_t agents = 0, mask_dim = 0;
    uint32_t obs = 0, act = 0, info = 0;
    int32_t nvec[SEER_MAX_COMPONENTS];
    for (uint32_t g = 0; g < ngroups; g++) {
        int rc = seer_model_group(m, config, s, g, &x[g], err, errlen);
        if (rc == SEER_OK)
            rc = check_group(m, g, &x[g], hooked, err, errlen);
        uint64_t choices = 0;
        if (rc == SEER_OK)
            rc = seer_model_action_nvec(m, config, s, g, &x[g], nvec, &choices, err, errlen);
        if (rc != SEER_OK)
            return rc;
        for (uint32_t h = 0; h < g; h++)
            if (strcmp(x[h].name, x[g].name) == 0)
                return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                     "model '%s': groups %u and %u are both named '%s' (group "
                                     "names must be unique)",
                                     n, h, g, x[g].name);
        agents += x[g].count;
        obs = x[g].obs_dim > obs ? x[g].obs_dim : obs;
        act = x[g].action_dim > act ? x[g].action_dim : act;
        info = x[g].info_dim > info ? x[g].info_dim : info;
        const uint64_t len = seer_model_group_choices(&x[g], choices);
        mask_dim = len > mask_dim ? len : mask_dim;
    }
    if (hooked) {
        if (agents != s->num_agents)
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "model '%s': the groups' counts add up to %llu agents but "
                                 "describe reports num_agents=%u (they must be equal)",
                                 n, (unsigned long long)agents, s->num_agents);
        s->obs_dim = obs;
        s->action_dim = act;
        s->info_dim = info;
        s->action_kind = x[0].action_kind;
        s->action_n = x[0].action_n;
        s->action_low = x[0].action_low;
        s->action_high = x[0].action_high;
    }
    s->mask_dim = 0;
    if (m->action_mask) {
        if (mask_dim == 0)
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s' has an action_mask hook but no discrete or "
                                 "multi-discrete actions to mask (box actions have no mask)",
                                 n);
        if (mask_dim > (1u << 20))
            return seer_fail_buf(err, errlen, SEER_E_CONFIG,
                                 "model '%s': an action mask of %llu choices is above the limit "
                                 "%u",
                                 n, (unsigned long long)mask_dim, 1u << 20);
        s->mask_dim = (uint32_t)mask_dim;
    }
    return SEER_OK;
}

int seer_model_describe(const seer_model *m, void *config, seer_sizes *out, char *err,
                        size_t errlen)
{
    int rc = seer_model_check(m, err, errlen);
    if (rc != SEER_OK)
        return rc;
    memset(out, 0, sizeof *out);
    char mmsg[SEER_ERRLEN] = "";
    rc = m->describe(config, out, mmsg, sizeof mmsg);
    if (rc != SEER_OK)
        return seer_fail_buf(err, errlen, SEER_E_CONFIG, "%s",
                             mmsg[0] ? mmsg : "invalid configuration (describe gave no reason)");
    /* the agents first (the groups' counts are checked against them) */
    if (out->num_entities == 0 || out->num_entities > SEER_MAX_ENTITIES || out->num_agents == 0 ||
        out->num_agents > out->num_entities)
        return check_sizes(m, out, err, errlen);
    rc = describe_groups(m, config, out, err, errlen);
    if (rc != SEER_OK)
        return rc;
    return check_sizes(m, out, err, errlen);
}

static int cmp_name_slots(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No two of the n names in `out` alike: an agent's name is its key in every
 * dict the env hands out.  Sorted pointers, so that 4,096 agents take
 * microseconds; on the host, at describe time (it allocates). */
static int check_unique_names(const seer_model *m, const char *out, uint32_t n, char *err,
                              size_t errlen)
{
    if (n < 2)
        return SEER_OK;
    const char **by = malloc((size_t)n * sizeof *by);
    if (!by)
        return seer_fail_buf(err, errlen, SEER_E_NOMEM, "out of memory checking %u agent names",
                             n);
    for (uint32_t i = 0; i < n; i++)
        by[i] = out + (size_t)i * SEER_NAME_LEN;
    qsort(by, n, sizeof *by, cmp_name_slots);
    int rc = SEER_OK;
    for (uint32_t i = 1; i < n && rc == SEER_OK; i++)
        if (strcmp(by[i - 1], by[i]) == 0) {
            const size_t a = (size_t)(by[i - 1] - out) / SEER_NAME_LEN;
            const size_t b = (size_t)(by[i] - out) / SEER_NAME_LEN;
            rc = seer_fail_buf(err, errlen, SEER_E_MODEL,
                               "model '%s': agent_name gives agents %zu and %zu one name, "
                               "'%s' (an agent's name is its key in every dict the env "
                               "returns)",
                               m->name, a < b ? a : b, a < b ? b : a, by[i]);
        }
    free(by);
    return rc;
}

int seer_model_agent_names(const seer_model *m, const void *config, const seer_sizes *sz,
                           uint32_t n, char *out, char *err, size_t errlen)
{
    if (!m->agent_name && hooked_groups(m, sz)) { /* "<group>_<index in the group>" */
        uint32_t i = 0;
        for (uint32_t g = 0; g < sz->num_groups && i < n; g++) {
            seer_group grp;
            int rc = seer_model_group(m, config, sz, g, &grp, err, errlen);
            if (rc != SEER_OK)
                return rc;
            for (uint32_t j = 0; j < grp.count && i < n; j++, i++) {
                char *slot = out + (size_t)i * SEER_NAME_LEN;
                memset(slot, 0, SEER_NAME_LEN);
                snprintf(slot, SEER_NAME_LEN, "%s_%u", grp.name, j);
            }
        }
        for (; i < n; i++)
            snprintf(out + (size_t)i * SEER_NAME_LEN, SEER_NAME_LEN, "agent_%u", i);
        return check_unique_names(m, out, n, err, errlen);
    }
    for (uint32_t i = 0; i < n; i++) {
        char *slot = out + (size_t)i * SEER_NAME_LEN;
        memset(slot, 0, SEER_NAME_LEN);
        if (!m->agent_name) {
            snprintf(slot, SEER_NAME_LEN, "agent_%u", i);
            continue;
        }
        if (m->agent_name(config, i, slot, SEER_NAME_LEN) != 0)
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s': agent_name failed for agent %u", m->name, i);
        slot[SEER_NAME_LEN - 1] = '\0';
        if (!slot[0])
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s': agent_name gave an empty name for agent %u",
                                 m->name, i);
    }
    return check_unique_names(m, out, n, err, errlen);
}

/* Every element of a hook's bounds a valid interval of floats: no NaN, low
 * <= high, low < +inf, high > -inf (what a Box space needs). */
static int check_bounds(const seer_model *m, const char *hook, const float *low,
                        const float *high, uint32_t n, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < n; i++) {
        const float lo = low[i], hi = high[i];
        if (isnan(lo) || isnan(hi) || lo > hi || lo == HUGE_VALF || hi == -HUGE_VALF)
            return seer_fail_buf(err, errlen, SEER_E_MODEL,
                                 "model '%s': %s gave element %u the bounds [%g, %g]: each "
                                 "must be a number or an infinity, low <= high (low below "
                                 "+inf, high above -inf)",
                                 m->name, hook, i, (double)lo, (double)hi);
    }
    return SEER_OK;
}

int seer_model_bounds(const seer_model *m, const void *config, const seer_sizes *sz,
                      float *obs_low, float *obs_high, float *state_low, float *state_high,
                      char *err, size_t errlen)
{
    for (uint32_t i = 0; i < sz->state_dim; i++) {
        state_low[i] = -HUGE_VALF;
        state_high[i] = HUGE_VALF;
    }
    int rc = SEER_OK;
    if (hooked_groups(m, sz)) { /* per group: seer_model_group_bounds */
        for (uint32_t i = 0; i < sz->obs_dim; i++) {
            obs_low[i] = -HUGE_VALF;
            obs_high[i] = HUGE_VALF;
        }
    } else { /* the one group's */
        rc = seer_model_group_bounds(m, config, sz, 0, sz->obs_dim, obs_low, obs_high, err,
                                     errlen);
    }
    if (rc == SEER_OK && m->state_bounds && sz->state_dim) {
        m->state_bounds(config, state_low, state_high);
        rc = check_bounds(m, "state_bounds", state_low, state_high, sz->state_dim, err, errlen);
    }
    return rc;
}

int seer_model_group_bounds(const seer_model *m, const void *config, const seer_sizes *sz,
                            uint32_t g, uint32_t obs_dim, float *low, float *high, char *err,
                            size_t errlen)
{
    for (uint32_t i = 0; i < obs_dim; i++) {
        low[i] = -HUGE_VALF;
        high[i] = HUGE_VALF;
    }
    if (!obs_dim)
        return SEER_OK;
    if (m->group_obs_bounds) {
        m->group_obs_bounds(config, g, low, high);
        return check_bounds(m, "group_obs_bounds", low, high, obs_dim, err, errlen);
    }
    if (!hooked_groups(m, sz) && m->obs_bounds) {
        m->obs_bounds(config, low, high);
        return check_bounds(m, "obs_bounds", low, high, obs_dim, err, errlen);
    }
    return SEER_OK;
}

const char *seer_model_info_name(const seer_model *m, uint32_t i)
{
    return m->info_names && m->info_names[i] ? m->info_names[i] : "";
}

const char *seer_model_event_name(const seer_model *m, uint32_t type)
{
    if (m->event_names && type < m->event_type_count && m->event_names[type])
        return m->event_names[type];
    return "?";
}
