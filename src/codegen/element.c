/* The per-element function of a fused group, shared by the engines: the fused pointwise
 * nodes between a group's loads and its stores. */
#include "codegen/codegen.h"

#include "engine/engine.h"

/* Whether a pointwise node of the group reads tensor id. */
static bool read_by_pointwise(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit_tensor_t id)
{
    for (int64_t i = 0; i < grp->node_count; i++) {
        const dnnjit__node_t *n = &g->nodes[grp->nodes[i]];
        for (int s = 0; n->op == DNNJIT_OP_POINTWISE && s < DNNJIT__MAX_INPUTS; s++)
            if (n->in[s] == id)
                return true;
    }
    return false;
}

static void emit_signature(dnnjit__strbuf_t *sb, const dnnjit__tensor_t *shape, dnnjit_tensor_t mm,
                           dnnjit__element_form_t form)
{
    if (form == DNNJIT__ELEMENT_AT_COORDS) {
        int batch_axes = shape->ndim - 2;
        dnnjit__sb_append(sb, "__device__ __forceinline__ void dj_epilogue(dj_i64 batch, dj_i64 row, dj_i64 col, "
                              "float acc, const DjArgs &args)\n{\n");
        if (batch_axes > 0)
            dnnjit__emit_coords(sb, "batch", batch_axes, shape->dim, "    ");
        else
            dnnjit__sb_append(sb, "    (void)batch;\n");
        dnnjit__sb_printf(sb, "    const dj_i64 c%d = row, c%d = col;\n", batch_axes, batch_axes + 1);
    } else {
        if (mm)
            dnnjit__sb_append(sb, "__device__ __forceinline__ void dj_epilogue(dj_i64 i, dj_acc acc, "
                                  "const DjArgs &args)\n{\n");
        else
            dnnjit__sb_append(sb, "__device__ __forceinline__ void dj_element(dj_i64 i, const DjArgs &args)\n{\n");
        dnnjit__emit_coords(sb, "i", shape->ndim, shape->dim, "    ");
    }
}

void dnnjit__emit_group_element(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp,
                                const dnnjit__kernel_t *k, const dnnjit__tensor_t *shape, dnnjit_tensor_t mm,
                                dnnjit__element_form_t form)
{
    emit_signature(sb, shape, mm, form);
    for (int64_t i = 0; i < grp->input_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->inputs[i]);
        if (!read_by_pointwise(g, grp, grp->inputs[i]))
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
    if (mm && read_by_pointwise(g, grp, mm))
        dnnjit__sb_printf(sb, "    const float v%u = (float)acc;\n", mm);
    for (int64_t i = 0; i < grp->node_count; i++)
        if (g->nodes[grp->nodes[i]].op == DNNJIT_OP_POINTWISE)
            dnnjit__emit_pointwise(sb, g, &g->nodes[grp->nodes[i]], "    ");
    /* The matmul output itself is stored from acc: through dj_from_acc when acc may be a
     * double (the fallback's DOUBLE compute), directly from float otherwise. */
    const char *from_acc = form == DNNJIT__ELEMENT_AT_COORDS ? "dj_from_float" : "dj_from_acc";
    for (int64_t i = 0; i < grp->output_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->outputs[i]);
        const char *type = dnnjit__cuda_type(t->resolved_type);
        dnnjit__sb_printf(sb, "    ((%s *)args.ptr[%d])[", type, dnnjit__slot_of(k->tensors, k->tensor_count, grp->outputs[i]));
        dnnjit__emit_offset(sb, t, shape->ndim);
        if (grp->outputs[i] == mm)
            dnnjit__sb_printf(sb, "] = %s<%s>(acc);\n", from_acc, type);
        else
            dnnjit__sb_printf(sb, "] = dj_from_float<%s>(v%u);\n", type, grp->outputs[i]);
    }
    dnnjit__sb_append(sb, "}\n\n");
}
