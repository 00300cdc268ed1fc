/* The pointwise engine: a fused pointwise DAG as one kernel. Knobs choose the block size
 * and whether to use vector access (DJ_VEC elements per thread, 16 bytes of the widest
 * tensor), which needs every tensor to be dense in the output's element order. */
#include "engine/engine.h"

#include "codegen/codegen.h"
#include "codegen/templates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    int block;
    bool vector;
} knobs[] = {{256, true}, {512, true}, {256, false}};

enum { KNOB_COUNT = sizeof knobs / sizeof knobs[0] };

/* The tensor a pointwise group's output shape comes from (its anchor's output). */
static const dnnjit__tensor_t *group_shape(dnnjit_graph_t g, const dnnjit__group_t *grp)
{
    return dnnjit__tensor(g, g->nodes[grp->first_node].out[0]);
}

static bool is_scalar(const dnnjit__tensor_t *t)
{
    return dnnjit__numel(t->ndim, t->dim) == 1;
}

/* Whether element i of t is at offset i for every row-major index i of the output. */
static bool dense_like(const dnnjit__tensor_t *t, const dnnjit__tensor_t *shape)
{
    if (t->ndim != shape->ndim || memcmp(t->dim, shape->dim, sizeof(int64_t) * (size_t)t->ndim))
        return false;
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->dim[i] != 1 && t->stride[i] != expect)
            return false;
        expect *= t->dim[i];
    }
    return true;
}

/* Elements per vector: 16 bytes of the widest tensor, or 1 when any tensor is not dense. */
static int vector_width(dnnjit_graph_t g, const dnnjit__group_t *grp)
{
    const dnnjit__tensor_t *shape = group_shape(g, grp);
    size_t widest = 1;
    for (int64_t i = 0; i < grp->input_count + grp->output_count; i++) {
        dnnjit_tensor_t id = dnnjit__group_tensor(grp, i);
        const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
        if (t->is_pass_by_value || (i < grp->input_count && is_scalar(t)))
            continue;
        if (!dense_like(t, shape))
            return 1;
        size_t size = dnnjit_data_type_size(t->resolved_type);
        widest = size > widest ? size : widest;
    }
    return (int)(16 / widest);
}

static bool pw_supports(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob, const char *arch, char *why,
                        size_t why_size)
{
    (void)arch;
    const char *reason = NULL;
    if (grp->kind != DNNJIT__GROUP_POINTWISE)
        reason = "the group is not a pointwise DAG";
    else if (knob < 0 || knob >= KNOB_COUNT)
        reason = "unknown knob";
    else if (!dnnjit__kernel_assign_slots(g, grp, &(dnnjit__kernel_t){0}))
        reason = "the group touches more tensors than a kernel takes";
    else if (knobs[knob].vector && vector_width(g, grp) == 1)
        reason = "vector access needs every tensor dense in the output's order";
    if (reason && why)
        snprintf(why, why_size, "%s", reason);
    return !reason;
}

static void pw_knob_name(int knob, char *buf, size_t size)
{
    snprintf(buf, size, "b%d_%s", knobs[knob].block, knobs[knob].vector ? "vec" : "scalar");
}

static double pw_cost(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    /* Bytes moved at about 3.8 TB/s; scalar access reaches about 70% of that. */
    double bytes = 0;
    for (int64_t i = 0; i < grp->input_count + grp->output_count; i++) {
        dnnjit_tensor_t id = dnnjit__group_tensor(grp, i);
        const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
        bytes += (double)dnnjit__numel(t->ndim, t->dim) * (double)dnnjit_data_type_size(t->resolved_type);
    }
    return 2.0 + bytes / 3.8e6 / (knobs[knob].vector ? 1.0 : 0.7);
}

/* Emits the loads of the group's inputs (element `e` of vectors in the vector form), the
 * node expressions, and the stores of its outputs. */
static void emit_body(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp, const dnnjit__kernel_t *k,
                      bool vector, const char *indent)
{
    const dnnjit__tensor_t *shape = group_shape(g, grp);
    for (int64_t i = 0; i < grp->input_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->inputs[i]);
        dnnjit__sb_printf(sb, "%sconst float v%u = ", indent, grp->inputs[i]);
        if (t->is_pass_by_value) {
            dnnjit__emit_scalar(sb, t, dnnjit__slot_of(k->scalars, k->scalar_count, grp->inputs[i]));
        } else if (vector && !is_scalar(t)) {
            dnnjit__sb_printf(sb, "dj_to_float(in%lld.v[e])", (long long)i);
        } else {
            dnnjit__sb_printf(sb, "dj_to_float(((const %s *)args.ptr[%d])[", dnnjit__cuda_type(t->resolved_type),
                              dnnjit__slot_of(k->tensors, k->tensor_count, grp->inputs[i]));
            if (vector)
                dnnjit__sb_append(sb, "0");
            else
                dnnjit__emit_offset(sb, t, shape->ndim);
            dnnjit__sb_append(sb, "])");
        }
        dnnjit__sb_append(sb, ";\n");
    }
    for (int64_t i = 0; i < grp->node_count; i++)
        dnnjit__emit_pointwise(sb, g, &g->nodes[grp->nodes[i]], indent);
    for (int64_t i = 0; i < grp->output_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->outputs[i]);
        const char *type = dnnjit__cuda_type(t->resolved_type);
        if (vector) {
            dnnjit__sb_printf(sb, "%sout%lld.v[e] = dj_from_float<%s>(v%u);\n", indent, (long long)i, type,
                              grp->outputs[i]);
        } else {
            dnnjit__sb_printf(sb, "%s((%s *)args.ptr[%d])[", indent, type,
                              dnnjit__slot_of(k->tensors, k->tensor_count, grp->outputs[i]));
            dnnjit__emit_offset(sb, t, shape->ndim);
            dnnjit__sb_printf(sb, "] = dj_from_float<%s>(v%u);\n", type, grp->outputs[i]);
        }
    }
}

/* The vector form: whole DJ_VEC-element vectors loaded and stored at index i0. */
static void emit_vector(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp, const dnnjit__kernel_t *k,
                        int vec)
{
    dnnjit__sb_append(sb, "__device__ __forceinline__ bool dj_aligned(const DjArgs &args)\n{\n    return (0");
    for (int i = 0; i < k->tensor_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, k->tensors[i]);
        if (dnnjit__slot_of(grp->inputs, (int)grp->input_count, k->tensors[i]) >= 0 && is_scalar(t))
            continue;
        dnnjit__sb_printf(sb, " | ((dj_u64)args.ptr[%d] %% %zu)", i, dnnjit_data_type_size(t->resolved_type) * (size_t)vec);
    }
    dnnjit__sb_append(sb, ") == 0;\n}\n\n");
    dnnjit__sb_append(sb, "__device__ __forceinline__ void dj_compute_vec(dj_i64 i0, const DjArgs &args)\n{\n");
    for (int64_t i = 0; i < grp->input_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->inputs[i]);
        if (t->is_pass_by_value || is_scalar(t))
            continue;
        const char *type = dnnjit__cuda_type(t->resolved_type);
        dnnjit__sb_printf(sb, "    const dj_vec<%s, DJ_VEC> in%lld = *(const dj_vec<%s, DJ_VEC> *)((const %s *)args.ptr[%d] + i0);\n",
                          type, (long long)i, type, type, dnnjit__slot_of(k->tensors, k->tensor_count, grp->inputs[i]));
    }
    for (int64_t i = 0; i < grp->output_count; i++)
        dnnjit__sb_printf(sb, "    dj_vec<%s, DJ_VEC> out%lld;\n",
                          dnnjit__cuda_type(dnnjit__tensor(g, grp->outputs[i])->resolved_type), (long long)i);
    dnnjit__sb_append(sb, "#pragma unroll\n    for (int e = 0; e < DJ_VEC; e++) {\n");
    emit_body(sb, g, grp, k, true, "        ");
    dnnjit__sb_append(sb, "    }\n");
    for (int64_t i = 0; i < grp->output_count; i++) {
        const char *type = dnnjit__cuda_type(dnnjit__tensor(g, grp->outputs[i])->resolved_type);
        dnnjit__sb_printf(sb, "    dj_vec_store((%s *)args.ptr[%d] + i0, out%lld);\n", type,
                          dnnjit__slot_of(k->tensors, k->tensor_count, grp->outputs[i]), (long long)i);
    }
    dnnjit__sb_append(sb, "}\n\n");
}

static dnnjit_status_t pw_generate(dnnjit_graph_t g, const dnnjit__partition_t *p, const dnnjit__group_t *grp,
                                   int knob, dnnjit__kernel_t *k)
{
    (void)p;
    *k = (dnnjit__kernel_t){0};
    const dnnjit__tensor_t *shape = group_shape(g, grp);
    int64_t numel = dnnjit__numel(shape->ndim, shape->dim);
    int vec = knobs[knob].vector ? vector_width(g, grp) : 1;
    dnnjit__kernel_assign_slots(g, grp, k); /* supports() checked that they fit */

    dnnjit__strbuf_t sb = {0};
    dnnjit__sb_append(&sb, dnnjit__template("common.cuh"));
    dnnjit__sb_printf(&sb, "\n// ---- generated for pointwise group of node \"%s\" ----\n", g->nodes[grp->first_node].name);
    dnnjit__sb_printf(&sb, "constexpr dj_i64 DJ_NUMEL = %lldLL;\nconstexpr int DJ_BLOCK = %d;\nconstexpr int DJ_VEC = %d;\n\n",
                      (long long)numel, knobs[knob].block, vec);
    dnnjit__sb_append(&sb, "__device__ __forceinline__ void dj_compute(dj_i64 i, const DjArgs &args)\n{\n");
    dnnjit__emit_coords(&sb, "i", shape->ndim, shape->dim, "    ");
    emit_body(&sb, g, grp, k, false, "    ");
    dnnjit__sb_append(&sb, "}\n\n");
    if (vec > 1)
        emit_vector(&sb, g, grp, k, vec);
    else
        dnnjit__sb_append(&sb, "__device__ __forceinline__ bool dj_aligned(const DjArgs &) { return false; }\n"
                               "__device__ __forceinline__ void dj_compute_vec(dj_i64, const DjArgs &) {}\n\n");
    dnnjit__sb_append(&sb, dnnjit__template("pointwise.cuh"));
    k->source = dnnjit__sb_take(&sb);
    if (!k->source)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "pointwise engine: out of memory generating source");
    snprintf(k->entry, sizeof k->entry, "dj_pointwise");
    int64_t work = (numel + vec - 1) / vec;
    int64_t blocks = (work + knobs[knob].block - 1) / knobs[knob].block;
    k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > 0x7fffffff ? 0x7fffffff : blocks);
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = (unsigned)knobs[knob].block;
    k->block[1] = k->block[2] = 1;
    return DNNJIT_STATUS_SUCCESS;
}

const dnnjit__engine_t dnnjit__engine_pointwise = {
    .name = "pointwise",
    .knob_count = KNOB_COUNT,
    .supports = pw_supports,
    .knob_name = pw_knob_name,
    .cost = pw_cost,
    .generate = pw_generate,
};
