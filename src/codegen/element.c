/* The per-element function of a fused group, shared by the engines: the fused pointwise
 * nodes between a group's loads and its stores. */
#include "codegen/codegen.h"

#include "engine/engine.h"

/* The nodes one function of a group evaluates: EPILOGUE, the pointwise nodes from the
 * anchor on (all of a pointwise group's); or 0 / 1, the prologue of a GEMM group's A / B
 * (nodes before the matmul, which partitioning admits only as prologue nodes). */
enum { EPILOGUE = -1 };

static bool in_part(dnnjit_graph_t g, const dnnjit__group_t *grp, int64_t node, int part)
{
    if (part == EPILOGUE)
        return node >= grp->first_node;
    return node < grp->first_node && dnnjit__prologue_slot(g, grp->first_node, node) == part;
}

/* Whether a pointwise node of the group's part reads tensor id. */
static bool read_by_pointwise(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit_tensor_t id, int part)
{
    for (int64_t i = 0; i < grp->node_count; i++) {
        const dnnjit__node_t *n = &g->nodes[grp->nodes[i]];
        for (int s = 0; n->op == DNNJIT_OP_POINTWISE && in_part(g, grp, grp->nodes[i], part) && s < DNNJIT__MAX_INPUTS;
             s++)
            if (n->in[s] == id)
                return true;
    }
    return false;
}

/* The coordinates c0..c{ndim-1} of shape, from the function's arguments. */
static void emit_element_coords(dnnjit__strbuf_t *sb, const dnnjit__tensor_t *shape, dnnjit__element_form_t form)
{
    if (form == DNNJIT__ELEMENT_AT_INDEX) {
        dnnjit__emit_coords(sb, "i", shape->ndim, shape->dim, "    ");
        return;
    }
    int batch_axes = shape->ndim - 2;
    if (batch_axes > 0)
        dnnjit__emit_coords(sb, "batch", batch_axes, shape->dim, "    ");
    else
        dnnjit__sb_append(sb, "    (void)batch;\n");
    dnnjit__sb_printf(sb, "    [[maybe_unused]] const dj_i64 c%d = row, c%d = col;\n", batch_axes, batch_axes + 1);
}

/* Loads what the pointwise nodes of one part read and evaluates them; the values they
 * compute end in their v<id> variables (the matmul output, if any, in acc). */
static void emit_values(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp, const dnnjit__kernel_t *k,
                        const dnnjit__tensor_t *shape, dnnjit_tensor_t mm, int part)
{
    for (int64_t i = 0; i < grp->input_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->inputs[i]);
        if (!read_by_pointwise(g, grp, grp->inputs[i], part))
            continue;
        dnnjit__sb_printf(sb, "    const float v%u = ", grp->inputs[i]);
        if (t->is_pass_by_value) {
            dnnjit__emit_scalar(sb, t, dnnjit__slot_of(k->scalars, k->scalar_count, grp->inputs[i]));
        } else {
            dnnjit__sb_printf(sb, "dj_to_float(((const %s *)args.ptr[%d])[", dnnjit__cuda_type(t->resolved_type),
                              dnnjit__slot_of(k->tensors, k->tensor_count, grp->inputs[i]));
            dnnjit__emit_offset(sb, t, shape->ndim);
            dnnjit__sb_append(sb, "])");
        }
        dnnjit__sb_append(sb, ";\n");
    }
    if (mm && read_by_pointwise(g, grp, mm, part))
        dnnjit__sb_printf(sb, "    const float v%u = (float)acc;\n", mm);
    for (int64_t i = 0; i < grp->node_count; i++)
        if (g->nodes[grp->nodes[i]].op == DNNJIT_OP_POINTWISE && in_part(g, grp, grp->nodes[i], part))
            dnnjit__emit_pointwise(sb, g, &g->nodes[grp->nodes[i]], "    ");
}

/* `(T *)args.ptr[slot] + offset` of output i at the current coordinates. */
static void emit_output_pointer(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp,
                                const dnnjit__kernel_t *k, const dnnjit__tensor_t *shape, int64_t i)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->outputs[i]);
    dnnjit__sb_printf(sb, "(%s *)args.ptr[%d] + (", dnnjit__cuda_type(t->resolved_type),
                      dnnjit__slot_of(k->tensors, k->tensor_count, grp->outputs[i]));
    dnnjit__emit_offset(sb, t, shape->ndim);
    dnnjit__sb_append(sb, ")");
}

/* AT_INDEX: one function that computes and stores. */
static void emit_at_index(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp, const dnnjit__kernel_t *k,
                          const dnnjit__tensor_t *shape, dnnjit_tensor_t mm)
{
    if (mm)
        dnnjit__sb_append(sb, "__device__ __forceinline__ void dj_epilogue(dj_i64 i, dj_acc acc, "
                              "const DjArgs &args)\n{\n");
    else
        dnnjit__sb_append(sb, "__device__ __forceinline__ void dj_element(dj_i64 i, const DjArgs &args)\n{\n");
    emit_element_coords(sb, shape, DNNJIT__ELEMENT_AT_INDEX);
    emit_values(sb, g, grp, k, shape, mm, EPILOGUE);
    /* The matmul output is stored from acc through dj_from_acc, as acc may be a double (the
     * fallback's DOUBLE compute). */
    for (int64_t i = 0; i < grp->output_count; i++) {
        const char *type = dnnjit__cuda_type(dnnjit__tensor(g, grp->outputs[i])->resolved_type);
        dnnjit__sb_append(sb, "    *(");
        emit_output_pointer(sb, g, grp, k, shape, i);
        if (grp->outputs[i] == mm)
            dnnjit__sb_printf(sb, ") = dj_from_acc<%s>(acc);\n", type);
        else
            dnnjit__sb_printf(sb, ") = dj_from_float<%s>(v%u);\n", type, grp->outputs[i]);
    }
    dnnjit__sb_append(sb, "}\n\n");
}

/* AT_COORDS: dj_epilogue_values (the outputs' values at one element) and dj_epilogue, which
 * takes the two neighbouring columns a tensor-core thread holds and stores each output as
 * one two-element vector where its layout and alignment allow. dj_epilogue is called, not
 * inlined: a tile's dozens of inlined copies would double the kernel's compile time for no
 * measurable gain in its run time. A kernel that calls it from a loop instead defines
 * DJ_EPILOGUE_INLINING as __forceinline__ first. */
static void emit_at_coords(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp,
                           const dnnjit__kernel_t *k, const dnnjit__tensor_t *shape, dnnjit_tensor_t mm)
{
    int64_t outs = grp->output_count;
    dnnjit__sb_printf(sb,
                      "__device__ __forceinline__ void dj_epilogue_values(dj_i64 batch, dj_i64 row, dj_i64 col, "
                      "float acc, float (&out)[%lld], const DjArgs &args)\n{\n",
                      (long long)outs);
    emit_element_coords(sb, shape, DNNJIT__ELEMENT_AT_COORDS);
    emit_values(sb, g, grp, k, shape, mm, EPILOGUE);
    for (int64_t i = 0; i < outs; i++) {
        if (grp->outputs[i] == mm)
            dnnjit__sb_printf(sb, "    out[%lld] = acc;\n", (long long)i);
        else
            dnnjit__sb_printf(sb, "    out[%lld] = v%u;\n", (long long)i, grp->outputs[i]);
    }
    dnnjit__sb_append(sb, "}\n\n");
    dnnjit__sb_printf(sb,
                      "#ifndef DJ_EPILOGUE_INLINING\n#define DJ_EPILOGUE_INLINING __noinline__\n#endif\n"
                      "__device__ DJ_EPILOGUE_INLINING void dj_epilogue(dj_i64 batch, dj_i64 row, dj_i64 col, "
                      "float acc0, float acc1, bool pair, const DjArgs &args)\n{\n    float o0[%lld], o1[%lld];\n"
                      "    dj_epilogue_values(batch, row, col, acc0, o0, args);\n"
                      "    if (pair)\n        dj_epilogue_values(batch, row, col + 1, acc1, o1, args);\n",
                      (long long)outs, (long long)outs);
    emit_element_coords(sb, shape, DNNJIT__ELEMENT_AT_COORDS);
    for (int64_t i = 0; i < outs; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->outputs[i]);
        int64_t col_stride = t->dim[t->ndim - 1] == 1 ? 0 : t->stride[t->ndim - 1];
        dnnjit__sb_printf(sb, "    dj_store_pair<%s, %lldLL>(", dnnjit__cuda_type(t->resolved_type), (long long)col_stride);
        emit_output_pointer(sb, g, grp, k, shape, i);
        dnnjit__sb_printf(sb, ", o0[%lld], o1[%lld], pair);\n", (long long)i, (long long)i);
    }
    dnnjit__sb_append(sb, "}\n\n");
}

void dnnjit__emit_group_element(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp,
                                const dnnjit__kernel_t *k, const dnnjit__tensor_t *shape, dnnjit_tensor_t mm,
                                dnnjit__element_form_t form)
{
    if (form == DNNJIT__ELEMENT_AT_COORDS)
        emit_at_coords(sb, g, grp, k, shape, mm);
    else
        emit_at_index(sb, g, grp, k, shape, mm);
}

bool dnnjit__group_has_prologue(dnnjit_graph_t g, const dnnjit__group_t *grp, int slot)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(g, g->nodes[grp->first_node].in[slot]);
    for (int64_t i = 0; grp->kind == DNNJIT__GROUP_GEMM && t->producer >= 0 && i < grp->node_count; i++)
        if (grp->nodes[i] == t->producer)
            return true;
    return false;
}

void dnnjit__emit_prologue(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp,
                           const dnnjit__kernel_t *k, int slot, dnnjit__element_form_t form)
{
    const dnnjit__node_t *mm = &g->nodes[grp->first_node];
    const dnnjit__tensor_t *c = dnnjit__tensor(g, mm->out[0]), *op = dnnjit__tensor(g, mm->in[slot]);
    /* The operand's own [M, K] or [K, N] behind C's batch axes: the operand and what its
     * prologue reads broadcast into this space, right-aligned, like the epilogue's inputs
     * into C. */
    dnnjit__tensor_t space = {.ndim = c->ndim};
    for (int a = 0; a < c->ndim - 2; a++)
        space.dim[a] = c->dim[a];
    space.dim[c->ndim - 2] = op->dim[op->ndim - 2];
    space.dim[c->ndim - 1] = op->dim[op->ndim - 1];
    if (form == DNNJIT__ELEMENT_AT_INDEX)
        dnnjit__sb_printf(sb, "__device__ __forceinline__ float dj_%c_prologue(dj_i64 i, const DjArgs &args)\n{\n",
                          slot ? 'b' : 'a');
    else
        dnnjit__sb_printf(sb,
                          "__device__ __forceinline__ float dj_%c_prologue(dj_i64 batch, dj_i64 row, dj_i64 col, "
                          "const DjArgs &args)\n{\n",
                          slot ? 'b' : 'a');
    emit_element_coords(sb, &space, form);
    emit_values(sb, g, grp, k, &space, DNNJIT_TENSOR_NONE, slot);
    dnnjit__sb_printf(sb, "    return v%u;\n}\n\n", mm->in[slot]);
}
