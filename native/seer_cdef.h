/* cffi declarations for seer_env._native (parsed by cffi, not by a C compiler).
 * Layouts marked `...` are taken from the real headers at build time. */
typedef double seer_time;
typedef struct seer_model seer_model;
typedef struct seer_runtime seer_runtime;

#define SEER_API_VERSION ...
#define SEER_OK ...
#define SEER_E_PAST ...
#define SEER_E_LOOKAHEAD ...
#define SEER_E_TARGET ...
#define SEER_E_PAYLOAD ...
#define SEER_E_TIME ...
#define SEER_E_PHASE ...
#define SEER_E_MODEL ...
#define SEER_E_ACTION ...
#define SEER_E_CONFIG ...
#define SEER_E_NOMEM ...
#define SEER_E_ORDER ...
#define SEER_E_ARG ...
#define SEER_E_EXECUTOR ...
#define SEER_ACTION_DISCRETE ...
#define SEER_ACTION_BOX ...
#define SEER_EXECUTOR_SERIAL ...
#define SEER_EXECUTOR_PARALLEL ...
#define SEER_BUF_ACTIONS ...
#define SEER_BUF_OBS ...
#define SEER_BUF_REWARD ...
#define SEER_BUF_TERMINATED ...
#define SEER_BUF_TRUNCATED ...
#define SEER_BUF_ALIVE ...
#define SEER_BUF_INFO ...
#define SEER_BUF_ACTIVE ...

typedef struct {
    uint32_t num_entities;
    uint32_t num_agents;
    uint32_t obs_dim;
    uint32_t action_dim;
    int32_t action_n;
    float action_low;
    float action_high;
    uint32_t info_dim;
    uint32_t state_dim;
    uint32_t entity_size;
    uint32_t payload_size;
    uint32_t snapshot_size;
    uint32_t instance_size;
    seer_time lookahead;
    seer_time step_duration;
    ...;
} seer_sizes;

typedef struct {
    uint64_t events;
    uint64_t windows;
    uint64_t steps;
    uint64_t pool_refills;
    uint64_t pool_events;
} seer_stats;

#define SEER_TRACE_EVENT ...
#define SEER_TRACE_ACT ...
#define SEER_TRACE_WINDOW ...
#define SEER_TRACE_BOUNDARY ...
#define SEER_TRACE_BARRIER ...
#define SEER_TRACE_INIT ...
typedef struct {
    uint64_t t0_ns;
    uint64_t t1_ns;
    double sim_time;
    uint32_t kind;
    uint32_t instance;
    uint32_t entity;
    uint32_t type;
    uint32_t count;
    uint32_t pad_;
} seer_trace_rec;
int seer_runtime_trace(seer_runtime *rt, uint64_t capacity);
uint64_t seer_runtime_trace_count(const seer_runtime *rt, uint32_t worker);
const seer_trace_rec *seer_runtime_trace_records(const seer_runtime *rt, uint32_t worker);
uint64_t seer_runtime_trace_dropped(const seer_runtime *rt);
void seer_runtime_trace_clear(seer_runtime *rt);
const char *seer_runtime_event_name(const seer_runtime *rt, uint32_t type);

int seer_sizes_action_kind(const seer_sizes *s);
const char *seer_model_info_name(const seer_model *m, uint32_t i);
const char *seer_model_name_of(const seer_model *m);
size_t seer_model_config_size(const seer_model *m);

int seer_runtime_create(const seer_model *model, const void *config, size_t config_size,
                        uint32_t num_instances, int executor, uint32_t threads,
                        uint64_t max_cycles, seer_runtime **out, char *err, size_t errlen);
void seer_runtime_destroy(seer_runtime *rt);
const char *seer_runtime_error(const seer_runtime *rt);
const seer_sizes *seer_runtime_sizes(const seer_runtime *rt);
const char *seer_runtime_model_name(const seer_runtime *rt);
uint32_t seer_runtime_num_instances(const seer_runtime *rt);
uint32_t seer_runtime_threads(const seer_runtime *rt);
/* Threads created (>= seer_runtime_threads: the others are parked). */
uint32_t seer_runtime_pool_size(const seer_runtime *rt);
int seer_runtime_executor(const seer_runtime *rt);
void *seer_runtime_buffer(seer_runtime *rt, int which);
int seer_runtime_set_threads(seer_runtime *rt, uint32_t threads);
int seer_runtime_set_executor(seer_runtime *rt, int executor, uint32_t threads);
int seer_runtime_reset(seer_runtime *rt, const uint64_t *seeds, const uint8_t *mask);
int seer_runtime_step(seer_runtime *rt, const uint8_t *mask);
int seer_runtime_step_index(const seer_runtime *rt, uint32_t instance, uint64_t *out);
int seer_runtime_entity_events(const seer_runtime *rt, uint32_t instance, uint64_t *out);
int seer_runtime_global_state(seer_runtime *rt, uint32_t instance, float *out);
int seer_runtime_entity_states(const seer_runtime *rt, uint32_t instance, void *out);
int seer_runtime_pending_events(const seer_runtime *rt, uint32_t instance, uint64_t *out);
void seer_runtime_stats(const seer_runtime *rt, seer_stats *out);
void seer_rng_seed_state(uint64_t seed, uint32_t entity, uint64_t s[4]);
