/* CUDA text for pointwise modes, literals and strided addressing. The expressions call the
 * device helpers of src/kernels/common.cuh, whose meaning matches src/ref/pointwise.c. */
#include "codegen/codegen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *dnnjit__cuda_type(dnnjit_data_type_t type)
{
    switch (type) {
    case DNNJIT_DATA_TYPE_FLOAT:
        return "float";
    case DNNJIT_DATA_TYPE_DOUBLE:
        return "double";
    case DNNJIT_DATA_TYPE_HALF:
        return "dj_half";
    case DNNJIT_DATA_TYPE_BFLOAT16:
        return "dj_bf16";
    case DNNJIT_DATA_TYPE_FP8_E4M3:
        return "dj_e4m3";
    case DNNJIT_DATA_TYPE_FP8_E5M2:
        return "dj_e5m2";
    case DNNJIT_DATA_TYPE_INT8:
        return "signed char";
    case DNNJIT_DATA_TYPE_INT32:
        return "int";
    case DNNJIT_DATA_TYPE_INT64:
        return "dj_i64";
    case DNNJIT_DATA_TYPE_BOOLEAN:
        return "dj_bool";
    default:
        return "void";
    }
}

void dnnjit__emit_float(dnnjit__strbuf_t *sb, double v)
{
    float f = (float)v;
    if (isnan(f))
        dnnjit__sb_append(sb, "__int_as_float(0x7fc00000)");
    else if (isinf(f))
        dnnjit__sb_append(sb, f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)");
    else {
        /* "%.9g" prints integral values without a point ("2"), and "2f" is not a C++
         * literal: such values get ".0". */
        char digits[32];
        snprintf(digits, sizeof digits, "%.9g", (double)f);
        dnnjit__sb_printf(sb, "%s%sf", digits, strpbrk(digits, ".e") ? "" : ".0");
    }
}

void dnnjit__emit_offset(dnnjit__strbuf_t *sb, const dnnjit__tensor_t *t, int ndim)
{
    bool any = false;
    for (int i = 0; i < t->ndim; i++) {
        int c = i + ndim - t->ndim;
        if (t->dim[i] == 1 || t->stride[i] == 0 || c < 0)
            continue;
        dnnjit__sb_printf(sb, "%sc%d * %lldLL", any ? " + " : "", c, (long long)t->stride[i]);
        any = true;
    }
    if (!any)
        dnnjit__sb_append(sb, "0");
}

/* Every coordinate is declared whether or not the expressions read it (a bias along the
 * columns reads only the last), so each is marked [[maybe_unused]]: NVRTC would otherwise
 * warn about the unread ones in every kernel it compiles. */
void dnnjit__emit_coords(dnnjit__strbuf_t *sb, const char *index, int ndim, const int64_t *dim, const char *indent)
{
    dnnjit__sb_printf(sb, "%sdj_i64 r_ = %s;\n", indent, index);
    for (int i = ndim - 1; i > 0; i--)
        dnnjit__sb_printf(sb, "%s[[maybe_unused]] const dj_i64 c%d = r_ %% %lldLL; r_ /= %lldLL;\n", indent, i,
                          (long long)dim[i], (long long)dim[i]);
    dnnjit__sb_printf(sb, "%s[[maybe_unused]] const dj_i64 c0 = r_;\n", indent);
}

void dnnjit__emit_scalar(dnnjit__strbuf_t *sb, const dnnjit__tensor_t *t, int slot)
{
    if (t->has_value)
        dnnjit__emit_float(sb, t->value);
    else
        dnnjit__sb_printf(sb, "args.scalar[%d]", slot);
}

/* fn(a[, b], param) for the activations that take one attribute. */
static void emit_param_call(dnnjit__strbuf_t *sb, const char *fn, const char *a, const char *b, double param)
{
    dnnjit__sb_printf(sb, "%s(%s, ", fn, a);
    if (b)
        dnnjit__sb_printf(sb, "%s, ", b);
    dnnjit__emit_float(sb, param);
    dnnjit__sb_append(sb, ")");
}

/* The expression of each mode, with a, b, c standing for the inputs' variables and the
 * attributes spliced in as literals. */
void dnnjit__emit_pointwise(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n, const char *indent)
{
    (void)g;
    char a[24], b[24], c[24];
    snprintf(a, sizeof a, "v%u", n->in[0]);
    snprintf(b, sizeof b, "v%u", n->in[1]);
    snprintf(c, sizeof c, "v%u", n->in[2]);
    dnnjit__sb_printf(sb, "%sconst float v%u = ", indent, n->out[0]);
    switch (n->attr.pointwise.mode) {
    case DNNJIT_POINTWISE_ADD: dnnjit__sb_printf(sb, "%s + %s", a, b); break;
    case DNNJIT_POINTWISE_SUB: dnnjit__sb_printf(sb, "%s - %s", a, b); break;
    case DNNJIT_POINTWISE_MUL: dnnjit__sb_printf(sb, "%s * %s", a, b); break;
    case DNNJIT_POINTWISE_DIV: dnnjit__sb_printf(sb, "%s / %s", a, b); break;
    case DNNJIT_POINTWISE_MAX: dnnjit__sb_printf(sb, "fmaxf(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_MIN: dnnjit__sb_printf(sb, "fminf(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_POW: dnnjit__sb_printf(sb, "powf(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_MOD: dnnjit__sb_printf(sb, "fmodf(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_ADD_SQUARE: dnnjit__sb_printf(sb, "%s + %s * %s", a, b, b); break;
    case DNNJIT_POINTWISE_SQRT: dnnjit__sb_printf(sb, "sqrtf(%s)", a); break;
    case DNNJIT_POINTWISE_RSQRT: dnnjit__sb_printf(sb, "rsqrtf(%s)", a); break;
    case DNNJIT_POINTWISE_RECIPROCAL: dnnjit__sb_printf(sb, "1.0f / %s", a); break;
    case DNNJIT_POINTWISE_EXP: dnnjit__sb_printf(sb, "expf(%s)", a); break;
    case DNNJIT_POINTWISE_LOG: dnnjit__sb_printf(sb, "logf(%s)", a); break;
    case DNNJIT_POINTWISE_NEG: dnnjit__sb_printf(sb, "-%s", a); break;
    case DNNJIT_POINTWISE_ABS: dnnjit__sb_printf(sb, "fabsf(%s)", a); break;
    case DNNJIT_POINTWISE_CEIL: dnnjit__sb_printf(sb, "ceilf(%s)", a); break;
    case DNNJIT_POINTWISE_FLOOR: dnnjit__sb_printf(sb, "floorf(%s)", a); break;
    case DNNJIT_POINTWISE_SIN: dnnjit__sb_printf(sb, "sinf(%s)", a); break;
    case DNNJIT_POINTWISE_COS: dnnjit__sb_printf(sb, "cosf(%s)", a); break;
    case DNNJIT_POINTWISE_TAN: dnnjit__sb_printf(sb, "tanf(%s)", a); break;
    case DNNJIT_POINTWISE_ERF: dnnjit__sb_printf(sb, "erff(%s)", a); break;
    case DNNJIT_POINTWISE_IDENTITY: dnnjit__sb_printf(sb, "%s", a); break;
    case DNNJIT_POINTWISE_TANH_FWD: dnnjit__sb_printf(sb, "tanhf(%s)", a); break;
    case DNNJIT_POINTWISE_SIGMOID_FWD: dnnjit__sb_printf(sb, "dj_sigmoid(%s)", a); break;
    case DNNJIT_POINTWISE_GELU_FWD: dnnjit__sb_printf(sb, "dj_gelu(%s)", a); break;
    case DNNJIT_POINTWISE_GELU_APPROX_TANH_FWD: dnnjit__sb_printf(sb, "dj_gelu_tanh(%s)", a); break;
    case DNNJIT_POINTWISE_TANH_BWD: dnnjit__sb_printf(sb, "dj_tanh_bwd(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_SIGMOID_BWD: dnnjit__sb_printf(sb, "dj_sigmoid_bwd(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_GELU_BWD: dnnjit__sb_printf(sb, "dj_gelu_bwd(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_GELU_APPROX_TANH_BWD: dnnjit__sb_printf(sb, "dj_gelu_tanh_bwd(%s, %s)", a, b); break;
    case DNNJIT_POINTWISE_RELU_FWD:
    case DNNJIT_POINTWISE_RELU_BWD:
        if (n->attr.pointwise.mode == DNNJIT_POINTWISE_RELU_FWD)
            dnnjit__sb_printf(sb, "dj_relu(%s, ", a);
        else
            dnnjit__sb_printf(sb, "dj_relu_bwd(%s, %s, ", a, b);
        dnnjit__emit_float(sb, n->attr.pointwise.relu_lower_clip);
        dnnjit__sb_append(sb, ", ");
        dnnjit__emit_float(sb, n->attr.pointwise.has_relu_upper_clip ? n->attr.pointwise.relu_upper_clip : INFINITY);
        dnnjit__sb_append(sb, ", ");
        dnnjit__emit_float(sb, n->attr.pointwise.relu_lower_clip_slope);
        dnnjit__sb_append(sb, ")");
        break;
    case DNNJIT_POINTWISE_ELU_FWD: emit_param_call(sb, "dj_elu", a, NULL, n->attr.pointwise.elu_alpha); break;
    case DNNJIT_POINTWISE_ELU_BWD: emit_param_call(sb, "dj_elu_bwd", a, b, n->attr.pointwise.elu_alpha); break;
    case DNNJIT_POINTWISE_SOFTPLUS_FWD:
        emit_param_call(sb, "dj_softplus", a, NULL, n->attr.pointwise.softplus_beta);
        break;
    case DNNJIT_POINTWISE_SOFTPLUS_BWD:
        emit_param_call(sb, "dj_softplus_bwd", a, b, n->attr.pointwise.softplus_beta);
        break;
    case DNNJIT_POINTWISE_SWISH_FWD: emit_param_call(sb, "dj_swish", a, NULL, n->attr.pointwise.swish_beta); break;
    case DNNJIT_POINTWISE_SWISH_BWD: emit_param_call(sb, "dj_swish_bwd", a, b, n->attr.pointwise.swish_beta); break;
    case DNNJIT_POINTWISE_CMP_EQ: dnnjit__sb_printf(sb, "dj_truth(%s == %s)", a, b); break;
    case DNNJIT_POINTWISE_CMP_NEQ: dnnjit__sb_printf(sb, "dj_truth(%s != %s)", a, b); break;
    case DNNJIT_POINTWISE_CMP_GT: dnnjit__sb_printf(sb, "dj_truth(%s > %s)", a, b); break;
    case DNNJIT_POINTWISE_CMP_GE: dnnjit__sb_printf(sb, "dj_truth(%s >= %s)", a, b); break;
    case DNNJIT_POINTWISE_CMP_LT: dnnjit__sb_printf(sb, "dj_truth(%s < %s)", a, b); break;
    case DNNJIT_POINTWISE_CMP_LE: dnnjit__sb_printf(sb, "dj_truth(%s <= %s)", a, b); break;
    case DNNJIT_POINTWISE_LOGICAL_AND: dnnjit__sb_printf(sb, "dj_truth(%s != 0.0f && %s != 0.0f)", a, b); break;
    case DNNJIT_POINTWISE_LOGICAL_OR: dnnjit__sb_printf(sb, "dj_truth(%s != 0.0f || %s != 0.0f)", a, b); break;
    case DNNJIT_POINTWISE_LOGICAL_NOT: dnnjit__sb_printf(sb, "dj_truth(%s == 0.0f)", a); break;
    case DNNJIT_POINTWISE_BINARY_SELECT: dnnjit__sb_printf(sb, "%s != 0.0f ? %s : %s", c, a, b); break;
    default:
        /* Validation rejects unknown modes before code generation. */
        dnnjit__sb_append(sb, "__int_as_float(0x7fc00000)");
        break;
    }
    dnnjit__sb_append(sb, ";\n");
}
