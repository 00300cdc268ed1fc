/* The build stages of the public API: operation graph, plan list, plan building. */
#include "engine/plan.h"

#include "codegen/templates.h"
#include "engine/canonical.h"
#include "common/strbuf.h"
#include "jit/jit.h"
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const dnnjit__engine_t dnnjit__engine_gemm_sm90;
extern const dnnjit__engine_t dnnjit__engine_gemm;
extern const dnnjit__engine_t dnnjit__engine_pointwise;
extern const dnnjit__engine_t dnnjit__engine_rows;
extern const dnnjit__engine_t dnnjit__engine_fallback;

const dnnjit__engine_t *const dnnjit__engines[] = {&dnnjit__engine_gemm_sm90, &dnnjit__engine_gemm,
                                                   &dnnjit__engine_pointwise, &dnnjit__engine_rows,
                                                   &dnnjit__engine_fallback, NULL};

/* ---- state ----------------------------------------------------------------------- */

/* Frees what generating and building made, leaving the plan's choices to build it again. */
static void free_kernels(dnnjit__plan_t *plan, int64_t groups)
{
    for (int64_t i = 0; plan->kernels && i < groups; i++) {
        dnnjit__kernel_free(&plan->kernels[i].kernel);
        free(plan->kernels[i].cubin);
        dnnjit__jit_ref_release(plan->kernels[i].module);
    }
    free(plan->kernels);
    plan->kernels = NULL;
    plan->built = false;
}

static void free_plan(dnnjit__plan_t *plan, int64_t groups)
{
    free_kernels(plan, groups);
    free(plan->choices);
}

static void free_plans(dnnjit__jit_state_t *s)
{
    for (int64_t i = 0; i < s->plan_count; i++)
        free_plan(&s->plans[i], s->partition.group_count);
    free(s->plans);
    s->plans = NULL;
    s->plan_count = 0;
    s->chosen = -1;
}

void dnnjit__jit_state_free(dnnjit__jit_state_t *s)
{
    if (!s)
        return;
    free_plans(s);
    for (int64_t i = 0; s->canon && i < s->partition.group_count; i++)
        dnnjit__canonical_free(&s->canon[i]);
    free(s->canon);
    dnnjit__partition_free(&s->partition);
    free(s->device_checked);
    free(s);
}

dnnjit_status_t dnnjit_graph_build_operation_graph(dnnjit_graph_t g)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_build_operation_graph: graph is NULL");
    if (g->jit)
        return DNNJIT_STATUS_SUCCESS;
    dnnjit_status_t s = dnnjit_graph_validate(g);
    if (s)
        return s;
    dnnjit__jit_state_t *state = calloc(1, sizeof *state);
    if (!state)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "build_operation_graph: out of memory");
    state->chosen = -1;
    s = dnnjit__partition(g, &state->partition);
    if (s) {
        free(state);
        return s;
    }
    int64_t groups = state->partition.group_count;
    state->canon = calloc((size_t)(groups ? groups : 1), sizeof *state->canon);
    /* Execute's record of the buffers it has checked, made here because execute allocates
     * nothing. */
    state->device_checked = calloc((size_t)g->tensor_count + 1, sizeof *state->device_checked);
    s = state->canon && state->device_checked
            ? DNNJIT_STATUS_SUCCESS
            : dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "build_operation_graph: out of memory");
    for (int64_t i = 0; i < groups && !s; i++)
        s = dnnjit__canonical_make(g, &state->partition.groups[i], &state->canon[i]);
    if (s) {
        dnnjit__jit_state_free(state);
        return s;
    }
    g->jit = state;
    return DNNJIT_STATUS_SUCCESS;
}

/* ---- plan lists --------------------------------------------------------------------- */

typedef struct candidate {
    dnnjit__plan_choice_t choice;
    double cost;
    double rule; /* mode A's order within an engine */
    /* Whether the engine adds a note to the knob's plans, each a caveat (REDUCED_PRECISION:
     * TF32 for FLOAT inputs; NONDETERMINISTIC: the rows engine's cluster plans with rows by
     * ticket): mode A ranks them after every plan without one, whichever engine offers
     * them, so that its first pick keeps the graph's precision and gives the same bits
     * every run; the fallback engine's plans, the slowest, stay last. */
    bool noted;
    /* Mode A's order of engines: the engine's place in the list, plus 1.5 for a knob the
     * engine defers (after the next engine's knobs, before the one after). */
    double tier;
    int64_t rank; /* position in the engine list's order, which breaks ties in cost */
} candidate_t;

static int by_cost(const void *a, const void *b)
{
    const candidate_t *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static bool is_fallback(const dnnjit__engine_t *e)
{
    return strcmp(e->name, "fallback") == 0;
}

static int by_rule(const void *a, const void *b)
{
    const candidate_t *x = a, *y = b;
    bool x_last = is_fallback(x->choice.engine), y_last = is_fallback(y->choice.engine);
    if (x_last != y_last)
        return x_last ? 1 : -1;
    if (x->noted != y->noted)
        return x->noted ? 1 : -1;
    if (x->tier != y->tier)
        return x->tier < y->tier ? -1 : 1;
    if (x->choice.engine != y->choice.engine || x->rule == y->rule)
        return x->rank < y->rank ? -1 : x->rank > y->rank;
    return x->rule < y->rule ? -1 : 1;
}

/* Ranks the candidates of a canonical group. */
static int64_t rank_canonical(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit_heur_mode_t mode, const char *arch,
                              candidate_t *out)
{
    int64_t n = 0;
    for (const dnnjit__engine_t *const *e = dnnjit__engines; *e; e++) {
        double place = (double)(e - dnnjit__engines);
        /* FALLBACK offers only the fallback engine; A and B offer every engine, the
         * fallback one included, so that every valid graph has plans in every mode. */
        if (mode == DNNJIT_HEUR_MODE_FALLBACK && !is_fallback(*e))
            continue;
        /* The reasons are asked for only when nothing supports the group (rank_group):
         * writing one per refused knob cost more than the rest of the ranking. */
        for (int k = 0; k < (*e)->knob_count; k++)
            if ((*e)->supports(g, grp, k, arch, NULL, 0))
            {
                double tier = (*e)->defer && (*e)->defer(g, grp, k) ? place + 1.5 : place;
                bool noted = (*e)->notes && (*e)->notes(k);
                out[n] = (candidate_t){{*e, k}, (*e)->cost(g, grp, k), (*e)->rule ? (*e)->rule(g, grp, k) : 0, noted,
                                       tier, n};
                n++;
            }
    }
    /* A group the fallback engine refuses (the partition, one for every mode, may fuse what
     * it runs alone) takes the simplest plan of an engine that offers one for FALLBACK. */
    for (const dnnjit__engine_t *const *e = dnnjit__engines; *e && !n && mode == DNNJIT_HEUR_MODE_FALLBACK; e++) {
        int k = (*e)->fallback_knob ? (*e)->fallback_knob(g, grp, arch, NULL, 0) : -1;
        if (k >= 0)
            out[n++] = (candidate_t){.choice = {*e, k}, .cost = (*e)->cost(g, grp, k)};
    }
    if (mode == DNNJIT_HEUR_MODE_B)
        qsort(out, (size_t)n, sizeof *out, by_cost);
    else
        qsort(out, (size_t)n, sizeof *out, by_rule);
    return n;
}

/* The ranked candidates of one group under one mode; *count may be 0 (then `why` says
 * what the engines said). The engines judge the group's canonical restatement, so that
 * the ranking can be remembered for every group of the same structure. */
static int64_t rank_group(dnnjit_graph_t g, int64_t group, dnnjit_heur_mode_t mode, const char *arch,
                          candidate_t *out, char *why, size_t why_size)
{
    dnnjit__canonical_t *canon = &g->jit->canon[group];
    char what[64];
    int what_size = snprintf(what, sizeof what, "ranking in mode %d for %s", (int)mode, arch);
    void *known;
    size_t size;
    if (dnnjit__memo_get(canon->print, what, (size_t)what_size, &known, &size)) {
        memcpy(out, known, size);
        free(known);
        return (int64_t)(size / sizeof *out);
    }
    int64_t n = rank_canonical(&canon->graph, &canon->group, mode, arch, out);
    if (n)
        dnnjit__memo_put(canon->print, what, (size_t)what_size, out, sizeof *out * (size_t)n);
    const dnnjit__group_t *grp = &g->jit->partition.groups[group];
    for (const dnnjit__engine_t *const *e = dnnjit__engines; *e && !n; e++)
        for (int k = 0; k < (*e)->knob_count && (mode != DNNJIT_HEUR_MODE_FALLBACK || is_fallback(*e)); k++)
            (*e)->supports(g, grp, k, arch, why, why_size);
    for (const dnnjit__engine_t *const *e = dnnjit__engines; *e && !n && mode == DNNJIT_HEUR_MODE_FALLBACK; e++)
        if ((*e)->fallback_knob)
            (*e)->fallback_knob(g, grp, arch, why, why_size);
    return n;
}

static int64_t total_knobs(void)
{
    int64_t n = 0;
    for (const dnnjit__engine_t *const *e = dnnjit__engines; *e; e++)
        n += (*e)->knob_count;
    return n;
}

static bool same_choices(const dnnjit__plan_t *a, const dnnjit__plan_choice_t *b, int64_t groups)
{
    for (int64_t i = 0; i < groups; i++)
        if (a->choices[i].engine != b[i].engine || a->choices[i].knob != b[i].knob)
            return false;
    return true;
}

/* Appends the plans of one mode: plan i takes each group's i-th candidate (or its last). */
static dnnjit_status_t add_mode_plans(dnnjit_graph_t g, dnnjit_heur_mode_t mode, const char *arch, candidate_t *cands,
                                      int64_t *counts, int64_t stride)
{
    dnnjit__jit_state_t *s = g->jit;
    int64_t groups = s->partition.group_count, depth = 0;
    for (int64_t i = 0; i < groups; i++) {
        char why[256] = "no engine of this mode handles it";
        counts[i] = rank_group(g, i, mode, arch, cands + i * stride, why, sizeof why);
        if (!counts[i])
            return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED, "heuristic mode %s: no engine supports the group of %s \"%s\" (%s)",
                                mode == DNNJIT_HEUR_MODE_A ? "A" : mode == DNNJIT_HEUR_MODE_B ? "B" : "FALLBACK",
                                dnnjit__op_label(g->nodes[s->partition.groups[i].first_node].op),
                                g->nodes[s->partition.groups[i].first_node].name, why);
        depth = counts[i] > depth ? counts[i] : depth;
    }
    for (int64_t p = 0; p < depth; p++) {
        dnnjit__plan_choice_t *choices = malloc(sizeof *choices * (size_t)groups);
        if (!choices)
            return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "create_execution_plans: out of memory");
        for (int64_t i = 0; i < groups; i++)
            choices[i] = cands[i * stride + (p < counts[i] ? p : counts[i] - 1)].choice;
        bool dup = false;
        for (int64_t q = 0; q < s->plan_count && !dup; q++)
            dup = same_choices(&s->plans[q], choices, groups);
        dnnjit__plan_t *grown = dup ? NULL : realloc(s->plans, sizeof *s->plans * (size_t)(s->plan_count + 1));
        if (dup || !grown) {
            free(choices);
            if (dup)
                continue;
            return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "create_execution_plans: out of memory");
        }
        s->plans = grown;
        s->plans[s->plan_count++] = (dnnjit__plan_t){.choices = choices};
    }
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_create_execution_plans(dnnjit_graph_t g, const dnnjit_heur_mode_t *modes, int mode_count)
{
    if (!g || (!modes && mode_count > 0) || mode_count < 0)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_create_execution_plans: %s",
                            !g ? "graph is NULL" : "modes is NULL or mode_count negative");
    for (int i = 0; i < mode_count; i++)
        if ((int)modes[i] < DNNJIT_HEUR_MODE_A || modes[i] > DNNJIT_HEUR_MODE_FALLBACK)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "create_execution_plans: unknown heuristic mode %d",
                                (int)modes[i]);
    dnnjit_status_t s = dnnjit_graph_build_operation_graph(g);
    if (s)
        return s;
    free_plans(g->jit);
    char arch[DNNJIT__ARCH_LEN] = "";
    if (g->handle)
        dnnjit_handle_get_arch(g->handle, arch, sizeof arch, NULL);
    int64_t groups = g->jit->partition.group_count, stride = total_knobs();
    candidate_t *cands = malloc(sizeof *cands * (size_t)(groups * stride));
    int64_t *counts = malloc(sizeof *counts * (size_t)groups);
    if (!cands || !counts)
        s = dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "create_execution_plans: out of memory");
    for (int i = 0; i < (mode_count ? mode_count : 1) && !s; i++)
        s = add_mode_plans(g, mode_count ? modes[i] : DNNJIT_HEUR_MODE_A, arch, cands, counts, stride);
    free(cands);
    free(counts);
    if (s)
        free_plans(g->jit);
    return s;
}

dnnjit_status_t dnnjit_graph_check_support(dnnjit_graph_t g)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_check_support: graph is NULL");
    if (!g->jit || !g->jit->plan_count)
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED,
                            "check_support: graph \"%s\" has no execution plans (call create_execution_plans first)",
                            g->name);
    return DNNJIT_STATUS_SUCCESS;
}

/* ---- names, notes, source ---------------------------------------------------------- */

static dnnjit_status_t plan_at(dnnjit_graph_t g, int64_t index, const char *fn, dnnjit__plan_t **plan)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "%s: graph is NULL", fn);
    int64_t count = g->jit ? g->jit->plan_count : 0;
    if (index < 0 || index >= count)
        return dnnjit__fail(g, count ? DNNJIT_STATUS_BAD_PARAM : DNNJIT_STATUS_BAD_STATE,
                            "%s: plan index %lld is outside 0..%lld", fn, (long long)index, (long long)count - 1);
    *plan = &g->jit->plans[index];
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_get_plan_count(dnnjit_graph_t g, int64_t *count)
{
    if (!g || !count)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_plan_count: %s is NULL", g ? "count" : "graph");
    *count = g->jit ? g->jit->plan_count : 0;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_get_plan_name(dnnjit_graph_t g, int64_t index, char **name)
{
    dnnjit__plan_t *plan = NULL;
    dnnjit_status_t s = plan_at(g, index, "dnnjit_graph_get_plan_name", &plan);
    if (s)
        return s;
    if (!name)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_plan_name: name is NULL");
    dnnjit__strbuf_t sb = {0};
    for (int64_t i = 0; i < g->jit->partition.group_count; i++) {
        char knob[64];
        plan->choices[i].engine->knob_name(plan->choices[i].knob, knob, sizeof knob);
        dnnjit__sb_printf(&sb, "%s%s%s%s", i ? "+" : "", plan->choices[i].engine->name, *knob ? "_" : "", knob);
    }
    *name = dnnjit__sb_take(&sb);
    return *name ? DNNJIT_STATUS_SUCCESS : dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "get_plan_name: out of memory");
}

static uint32_t plan_notes(dnnjit_graph_t g, const dnnjit__plan_t *plan)
{
    uint32_t notes = DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    for (int64_t i = 0; i < g->jit->partition.group_count; i++)
        if (plan->choices[i].engine->notes)
            notes |= plan->choices[i].engine->notes(plan->choices[i].knob);
    return notes;
}

dnnjit_status_t dnnjit_graph_get_plan_behavior_notes(dnnjit_graph_t g, int64_t index, uint32_t *notes)
{
    dnnjit__plan_t *plan = NULL;
    dnnjit_status_t s = plan_at(g, index, "dnnjit_graph_get_plan_behavior_notes", &plan);
    if (s)
        return s;
    if (!notes)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_plan_behavior_notes: notes is NULL");
    *notes = plan_notes(g, plan);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_deselect_behavior_notes(dnnjit_graph_t g, uint32_t notes)
{
    const uint32_t known = DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION | DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION |
                           DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC;
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_deselect_behavior_notes: graph is NULL");
    if (notes & ~known)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "dnnjit_graph_deselect_behavior_notes: notes %#x has bits %#x that no behavior note has",
                            notes, notes & ~known);
    if (!g->jit || !g->jit->plan_count)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                            "dnnjit_graph_deselect_behavior_notes: graph \"%s\" has no execution plans (call "
                            "create_execution_plans first)",
                            g->name);
    dnnjit__jit_state_t *s = g->jit;
    int64_t kept = 0;
    for (int64_t i = 0; i < s->plan_count; i++) {
        if (s->plans[i].built)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                                "dnnjit_graph_deselect_behavior_notes: graph \"%s\" has built plans; deselect before "
                                "build_plans",
                                g->name);
        kept += !(plan_notes(g, &s->plans[i]) & notes);
    }
    /* The list stays as it was rather than left empty, so that the caller can still build
     * from it. */
    if (!kept)
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED,
                            "dnnjit_graph_deselect_behavior_notes: every one of graph \"%s\"'s %lld plans has a note "
                            "of %#x; the list is unchanged",
                            g->name, (long long)s->plan_count, notes);
    int64_t to = 0;
    for (int64_t i = 0; i < s->plan_count; i++) {
        if (plan_notes(g, &s->plans[i]) & notes)
            free_plan(&s->plans[i], s->partition.group_count);
        else
            s->plans[to++] = s->plans[i];
    }
    s->plan_count = to;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_get_chosen_plan(dnnjit_graph_t g, int64_t *index)
{
    if (!g || !index)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_chosen_plan: %s is NULL", g ? "index" : "graph");
    *index = g->jit ? g->jit->chosen : -1;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_get_workspace_size(dnnjit_graph_t g, int64_t *size)
{
    if (!g || !size)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_workspace_size: %s is NULL", g ? "size" : "graph");
    if (!g->jit)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                            "get_workspace_size: graph \"%s\" is not built (call build_operation_graph first)", g->name);
    *size = dnnjit__workspace_size(g->jit, NULL);
    return DNNJIT_STATUS_SUCCESS;
}

int64_t dnnjit__workspace_size(const dnnjit__jit_state_t *s, int64_t *scratch_offset)
{
    int64_t offset = (s->partition.workspace_size + 255) / 256 * 256, scratch = 0;
    const dnnjit__plan_t *plan = s->chosen >= 0 ? &s->plans[s->chosen] : NULL;
    for (int64_t i = 0; plan && plan->kernels && i < s->partition.group_count; i++)
        if (plan->kernels[i].kernel.scratch_bytes > scratch)
            scratch = plan->kernels[i].kernel.scratch_bytes;
    if (scratch_offset)
        *scratch_offset = offset;
    return scratch ? offset + scratch : s->partition.workspace_size;
}

/* Generates one group's kernel from its canonical restatement, so that the source depends
 * on the group's structure only (see engine/canonical.h). What an engine generates for a
 * print is remembered: the kernel description, then its source. */
static dnnjit_status_t generate_group(dnnjit_graph_t g, int64_t group, const dnnjit__plan_choice_t *c,
                                      dnnjit__kernel_t *k)
{
    dnnjit__canonical_t *canon = &g->jit->canon[group];
    char what[96];
    int what_size = snprintf(what, sizeof what, "kernel of %s knob %d", c->engine->name, c->knob);
    void *known;
    size_t size;
    if (dnnjit__memo_get(canon->print, what, (size_t)what_size, &known, &size)) {
        memcpy(k, known, sizeof *k);
        k->source = dnnjit__strdup((const char *)known + sizeof *k);
        free(known);
        if (!k->source)
            return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "generate: out of memory");
        dnnjit__canonical_unmap(canon, k);
        return DNNJIT_STATUS_SUCCESS;
    }
    dnnjit_status_t s = c->engine->generate(&canon->graph, &canon->partition, &canon->group, c->knob, k);
    if (s) {
        /* The message names the canonical nodes ("#0" is the group's first): say which
         * group it is about. */
        const dnnjit__node_t *anchor = &g->nodes[g->jit->partition.groups[group].first_node];
        return dnnjit__fail(g, s, "the group of %s \"%s\" (\"#0\" is its first node): %s",
                            dnnjit__op_label(anchor->op), anchor->name, canon->graph.error);
    }
    /* Counters the kernel needs zeroed are zeroed by a kernel of the same module, which
     * execute launches before it (see zero_scratch.cuh). */
    if (k->scratch_zero_bytes) {
        dnnjit__strbuf_t sb = {0};
        dnnjit__sb_append(&sb, k->source);
        dnnjit__sb_append(&sb, "\n");
        dnnjit__sb_append(&sb, dnnjit__template("zero_scratch.cuh"));
        char *source = dnnjit__sb_take(&sb);
        if (!source)
            return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "generate: out of memory");
        free(k->source);
        k->source = source;
    }
    size_t text = strlen(k->source) + 1;
    unsigned char *record = malloc(sizeof *k + text);
    if (record) {
        dnnjit__kernel_t bare = *k;
        bare.source = NULL;
        memcpy(record, &bare, sizeof bare);
        memcpy(record + sizeof *k, k->source, text);
        dnnjit__memo_put(canon->print, what, (size_t)what_size, record, sizeof *k + text);
        free(record);
    }
    dnnjit__canonical_unmap(canon, k);
    return DNNJIT_STATUS_SUCCESS;
}

/* Generates the kernels of a plan that has none yet. */
static dnnjit_status_t generate(dnnjit_graph_t g, dnnjit__plan_t *plan)
{
    if (plan->kernels)
        return DNNJIT_STATUS_SUCCESS;
    int64_t groups = g->jit->partition.group_count;
    plan->kernels = calloc((size_t)groups, sizeof *plan->kernels);
    if (!plan->kernels)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "generate: out of memory");
    for (int64_t i = 0; i < groups; i++) {
        dnnjit_status_t s = generate_group(g, i, &plan->choices[i], &plan->kernels[i].kernel);
        if (s) {
            free_kernels(plan, groups);
            return s;
        }
    }
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_get_plan_source(dnnjit_graph_t g, int64_t index, char **source)
{
    dnnjit__plan_t *plan = NULL;
    dnnjit_status_t s = plan_at(g, index, "dnnjit_graph_get_plan_source", &plan);
    if (s)
        return s;
    if (!source)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_plan_source: source is NULL");
    if ((s = generate(g, plan)))
        return s;
    dnnjit__strbuf_t sb = {0};
    for (int64_t i = 0; i < g->jit->partition.group_count; i++) {
        const dnnjit__kernel_t *k = &plan->kernels[i].kernel;
        /* The kernel's source names no node (see generate_group); this header says which
         * group it runs. */
        const dnnjit__node_t *anchor = &g->nodes[g->jit->partition.groups[i].first_node];
        dnnjit__sb_printf(&sb,
                          "// ==== kernel %lld of %lld: %s for the group of %s \"%s\", grid (%u, %u, %u), block (%u, %u, "
                          "%u) ====\n",
                          (long long)i + 1, (long long)g->jit->partition.group_count, k->entry,
                          dnnjit__op_label(anchor->op), anchor->name, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                          k->block[1], k->block[2]);
        dnnjit__sb_append(&sb, k->source);
    }
    *source = dnnjit__sb_take(&sb);
    return *source ? DNNJIT_STATUS_SUCCESS : dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "get_plan_source: out of memory");
}

/* ---- building ------------------------------------------------------------------------ */

/* A kernel loaded on the device, shared through its kernel-cache entry. */
typedef struct loaded_kernel {
    dnnjit__cu_module_t module;
    dnnjit__cu_function_t fn;
    dnnjit__cu_function_t zero_fn; /* dj_zero_scratch, for a kernel with counters to zero */
    unsigned grid0;                /* the grid's x size launched on this device */
} loaded_kernel_t;

static void unload_kernel(void *object)
{
    loaded_kernel_t *k = object;
    dnnjit__cuda()->cuModuleUnload(k->module);
    free(k);
}

/* The x size of the grid that launches kernel k (loaded as fn) on the current device: its
 * resident_tail blocks after as many of its clusters as the device holds at once, at
 * least one (see dnnjit__kernel_t); the grid as generated for other kernels, and where the
 * driver cannot say (before CUDA 12), which is slower when not every cluster fits but as
 * correct. */
static dnnjit_status_t fitted_grid(const dnnjit__kernel_t *k, dnnjit__cu_function_t fn, unsigned *grid0)
{
    *grid0 = k->grid[0];
    if (!k->resident_cluster || !dnnjit__cuda()->cuOccupancyMaxActiveClusters)
        return DNNJIT_STATUS_SUCCESS;
    unsigned most = (k->grid[0] - k->resident_tail) / k->resident_cluster;
    dnnjit__cu_launch_config_t config = {.grid = {most * k->resident_cluster, k->grid[1], k->grid[2]},
                                         .block = {k->block[0], k->block[1], k->block[2]},
                                         .shared_bytes = k->shared_bytes};
    int held = 0;
    dnnjit_status_t s = dnnjit__cu_check(dnnjit__cuda()->cuOccupancyMaxActiveClusters(&held, fn, &config),
                                         "cuOccupancyMaxActiveClusters");
    if (s)
        return s;
    if (held < 1)
        return dnnjit__fail(NULL, DNNJIT_STATUS_NOT_SUPPORTED,
                            "kernel %s: the device cannot hold one cluster of %u blocks of %u threads", k->entry,
                            k->resident_cluster, k->block[0] * k->block[1] * k->block[2]);
    unsigned clusters = (unsigned)held < most ? (unsigned)held : most;
    *grid0 = clusters * k->resident_cluster + k->resident_tail;
    dnnjit__log("kernel %s: %d clusters of %u blocks fit at once, %u of them launched", k->entry, held,
                k->resident_cluster, clusters);
    return DNNJIT_STATUS_SUCCESS;
}

/* Loads a built kernel's CUBIN and attaches it to its cache entry. If another graph
 * attached the same kernel meanwhile, that one is used and this load is undone. */
static dnnjit_status_t load_and_attach(const dnnjit__built_kernel_t *b, dnnjit__jit_key_t key, dnnjit__jit_ref_t **ref)
{
    loaded_kernel_t *k = malloc(sizeof *k);
    if (!k)
        return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "build_plans: out of memory");
    dnnjit_status_t s = dnnjit__driver_load_kernel(b->cubin, b->kernel.entry, &k->module, &k->fn);
    if (s) {
        free(k);
        return s;
    }
    /* Past 48 KiB, dynamic shared memory is granted only on request, and the 48 KiB count
     * the kernel's static shared memory too (a split-K sm_80 kernel declares a word): asked
     * for whenever the kernel takes any, rather than only when the dynamic part alone is
     * past the limit. */
    if (b->kernel.shared_bytes > 0)
        s = dnnjit__cu_check(dnnjit__cuda()->cuFuncSetAttribute(k->fn, DNNJIT__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                                (int)b->kernel.shared_bytes),
                             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    k->zero_fn = NULL;
    if (!s)
        s = fitted_grid(&b->kernel, k->fn, &k->grid0);
    if (!s && b->kernel.scratch_zero_bytes)
        s = dnnjit__cu_check(dnnjit__cuda()->cuModuleGetFunction(&k->zero_fn, k->module, "dj_zero_scratch"),
                             "cuModuleGetFunction(\"dj_zero_scratch\")");
    if (!s)
        s = dnnjit__jit_cache_attach(key, k, unload_kernel, ref);
    if (s || dnnjit__jit_ref_object(*ref) != k)
        unload_kernel(k);
    return s;
}

dnnjit_status_t dnnjit__plan_load_kernel(dnnjit__built_kernel_t *b, dnnjit__jit_key_t key)
{
    /* Loaded modules are shared through the cache entry, so that graphs with the same
     * kernel load it once; each built kernel holds a reference, so that clearing the cache
     * cannot unload a module a graph still launches. */
    dnnjit__jit_ref_t *ref = dnnjit__jit_cache_acquire(key);
    dnnjit_status_t s = ref ? DNNJIT_STATUS_SUCCESS : load_and_attach(b, key, &ref);
    if (!s) {
        dnnjit__jit_ref_release(b->module);
        b->module = ref;
        const loaded_kernel_t *loaded = dnnjit__jit_ref_object(ref);
        b->function = loaded->fn;
        b->zero_function = loaded->zero_fn;
        b->grid[0] = loaded->grid0;
        b->grid[1] = b->kernel.grid[1];
        b->grid[2] = b->kernel.grid[2];
    }
    return s;
}

static dnnjit_status_t build_plan(dnnjit_graph_t g, dnnjit__plan_t *plan, const char *arch, bool has_device)
{
    if (plan->built)
        return DNNJIT_STATUS_SUCCESS;
    dnnjit_status_t s = generate(g, plan);
    for (int64_t i = 0; i < g->jit->partition.group_count && !s; i++) {
        dnnjit__built_kernel_t *b = &plan->kernels[i];
        dnnjit__jit_key_t key;
        dnnjit__compile_options_t options;
        s = dnnjit__jit_get_cubin(b->kernel.source, b->kernel.entry, arch, dnnjit__kernel_options(&b->kernel, &options),
                                  &b->cubin, &b->cubin_size, &key);
        if (!s && has_device)
            s = dnnjit__plan_load_kernel(b, key);
    }
    plan->built = !s;
    return s;
}

static dnnjit_status_t build_target(dnnjit_graph_t g, char *arch, bool *has_device)
{
    if (!g->jit || !g->jit->plan_count)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                            "build_plans: graph \"%s\" has no execution plans (call create_execution_plans first)", g->name);
    if (!g->handle)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                            "build_plans: graph \"%s\" has no handle; create it with a handle from dnnjit_handle_create "
                            "or dnnjit_handle_create_for_arch", g->name);
    dnnjit_handle_get_arch(g->handle, arch, DNNJIT__ARCH_LEN, has_device);
    if (!*arch)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                            "build_plans: the handle has no GPU and names no architecture (use "
                            "dnnjit_handle_create_for_arch, e.g. \"sm_90a\")");
    return DNNJIT_STATUS_SUCCESS;
}

/* Compiles the kernels of every plan not built yet on several threads at once (see
 * dnnjit__jit_precompile), so that building the plans one after another then finds them
 * in the kernel cache: NVRTC takes 0.1 to 0.6 s a kernel, and a GEMM lists dozens of
 * plans. Failures are left to that build to report, as is running out of memory here. */
static void precompile_plans(dnnjit_graph_t g, const char *arch, int64_t threads)
{
    int64_t groups = g->jit->partition.group_count, count = 0;
    size_t most = (size_t)(g->jit->plan_count * groups);
    dnnjit__jit_job_t *jobs = malloc(sizeof *jobs * most);
    dnnjit__compile_options_t *options = malloc(sizeof *options * most);
    for (int64_t p = 0; jobs && options && p < g->jit->plan_count; p++) {
        dnnjit__plan_t *plan = &g->jit->plans[p];
        if (plan->built || generate(g, plan) != DNNJIT_STATUS_SUCCESS)
            continue;
        for (int64_t i = 0; i < groups; i++, count++) {
            const dnnjit__kernel_t *k = &plan->kernels[i].kernel;
            jobs[count] = (dnnjit__jit_job_t){k->source, k->entry, dnnjit__kernel_options(k, &options[count])};
        }
    }
    if (jobs && options)
        dnnjit__jit_precompile(jobs, count, arch, threads);
    free(jobs);
    free(options);
}

dnnjit_status_t dnnjit_graph_build_plans(dnnjit_graph_t g, dnnjit_build_plan_policy_t policy)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_build_plans: graph is NULL");
    if (policy != DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE && policy != DNNJIT_BUILD_PLAN_ALL)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "build_plans: unknown policy %d", (int)policy);
    char arch[DNNJIT__ARCH_LEN];
    bool has_device;
    dnnjit_status_t s = build_target(g, arch, &has_device);
    if (s)
        return s;
    if (policy == DNNJIT_BUILD_PLAN_ALL) {
        int64_t threads;
        if ((s = dnnjit__jit_compile_threads(&threads)) != DNNJIT_STATUS_SUCCESS) {
            char message[DNNJIT__MSG_LEN];
            snprintf(message, sizeof message, "%s", dnnjit_last_error());
            return dnnjit__fail(g, s, "build_plans: %s", message);
        }
        precompile_plans(g, arch, threads);
    }
    /* A choice autotune remembered comes first when nothing is chosen yet; if it does not
     * build, the list's order decides as usual. */
    int64_t remembered = g->jit->chosen < 0 ? dnnjit__autotune_remembered(g) : -1;
    if (remembered >= 0 && build_plan(g, &g->jit->plans[remembered], arch, has_device) == DNNJIT_STATUS_SUCCESS)
        g->jit->chosen = remembered;
    dnnjit_status_t first_error = DNNJIT_STATUS_SUCCESS;
    char message[DNNJIT__MSG_LEN] = "";
    for (int64_t i = 0; i < g->jit->plan_count; i++) {
        if (g->jit->chosen >= 0 && policy == DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE)
            break;
        s = build_plan(g, &g->jit->plans[i], arch, has_device);
        if (s && !first_error) {
            first_error = s;
            snprintf(message, sizeof message, "%s", dnnjit_last_error());
        }
        if (!s && g->jit->chosen < 0)
            g->jit->chosen = i;
    }
    if (g->jit->chosen < 0)
        return dnnjit__fail(g, first_error, "build_plans: no plan of graph \"%s\" could be built; the first failure: %s",
                            g->name, message);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_build_plan_at_index(dnnjit_graph_t g, int64_t index)
{
    dnnjit__plan_t *plan = NULL;
    dnnjit_status_t s = plan_at(g, index, "dnnjit_graph_build_plan_at_index", &plan);
    char arch[DNNJIT__ARCH_LEN];
    bool has_device;
    if (!s)
        s = build_target(g, arch, &has_device);
    if (!s)
        s = build_plan(g, plan, arch, has_device);
    if (!s)
        g->jit->chosen = index;
    return s;
}

dnnjit_status_t dnnjit_graph_build(dnnjit_graph_t g, const dnnjit_heur_mode_t *modes, int mode_count)
{
    /* Checked here so that the message names this call, not the first one it makes. */
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_build: graph is NULL");
    dnnjit_status_t s = dnnjit_graph_create_execution_plans(g, modes, mode_count);
    if (!s)
        s = dnnjit_graph_check_support(g);
    if (!s)
        s = dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE);
    return s;
}
