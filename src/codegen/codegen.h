/* Pieces of CUDA source shared by the engines: type names, literals, strided offsets and
 * the fused pointwise expressions. Values live in float variables named v<tensor id>. */
#ifndef DNNJIT_CODEGEN_CODEGEN_H
#define DNNJIT_CODEGEN_CODEGEN_H

#include "common/strbuf.h"
#include "graph/graph.h"

/* The storage type a kernel uses for a data type ("dj_half", "float", ...). */
const char *dnnjit__cuda_type(dnnjit_data_type_t type);

/* Generated device functions whose body is one volatile asm statement (the GEMM engines'
 * accumulator registers, which only asm statements name). dnnjit__asm_line appends one line
 * of the statement's text to `text`: printed from `fmt`, quoted, with PTX's newline.
 * dnnjit__emit_asm_function writes the function: `head` (its name and parameters), the
 * text (which it empties), then `operands` (the asm's operand lists from their first colon,
 * or ""). */
void dnnjit__asm_line(dnnjit__strbuf_t *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dnnjit__emit_asm_function(dnnjit__strbuf_t *sb, const char *head, dnnjit__strbuf_t *text, const char *operands);

/* The moves between a GEMM engine's accumulator registers and a generated function's float
 * operands v: dnnjit__emit_reg_moves writes function `head`, whose asm statement moves the
 * first n floats of registers reg0 .. reg<count - 1> into v (with `write`, from v into them;
 * with `halves`, each register holds two fp16 halves, the lower one first, which it reads
 * as floats: n / 2 registers), then with `shift` moves the other registers down by as many
 * as it read. Operand i is v[i], or with `nested` > 0 v[i / 4 / nested][i / 4 % nested][i % 4]
 * (fragments of four floats, `nested` to a row). */
typedef struct dnnjit__reg_moves {
    const char *reg;
    int count, n, nested;
    bool write, halves, shift;
} dnnjit__reg_moves_t;
void dnnjit__emit_reg_moves(dnnjit__strbuf_t *sb, const char *head, const dnnjit__reg_moves_t *m);

/* A float literal that reads back exactly as the float nearest `v` (inf and NaN too). */
void dnnjit__emit_float(dnnjit__strbuf_t *sb, double v);

/* The element offset, in tensor t, of the element at coordinates c0..c{ndim-1} of an
 * output of rank `ndim` into which t broadcasts (right-aligned; size-1 dims contribute 0). */
void dnnjit__emit_offset(dnnjit__strbuf_t *sb, const dnnjit__tensor_t *t, int ndim);

/* Declares `const dj_i64 c0..c{ndim-1}` from the linear row-major index expression `index`
 * over dims. */
void dnnjit__emit_coords(dnnjit__strbuf_t *sb, const char *index, int ndim, const int64_t *dim, const char *indent);

/* Emits `float v<out> = <expression>;` for one pointwise node whose inputs are already in
 * their v<id> variables. */
void dnnjit__emit_pointwise(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n, const char *indent);

/* The reduction modes' template (src/kernels/reduce_modes.cuh), then DJ_MODE, the mode of a
 * REDUCTION node: what the rows and fallback engines' reduction kernels are specialised by. */
void dnnjit__emit_reduce_mode(dnnjit__strbuf_t *sb, dnnjit_reduction_mode_t mode);

/* Emits the value of a pass-by-value tensor: its fixed value as a literal, or the kernel
 * argument slot args.scalar[slot]. */
void dnnjit__emit_scalar(dnnjit__strbuf_t *sb, const dnnjit__tensor_t *t, int slot);

/* The per-element function of a group: its pointwise nodes evaluated in float, reading the
 * group's inputs at their broadcast offsets in `shape` and storing every output of the
 * group. With `mm` (the matmul output of a GEMM group) the function is the GEMM epilogue and
 * receives mm's value as acc. Forms:
 *   AT_INDEX   dj_element(i, args), or dj_epilogue(i, dj_acc acc, args): i is the linear
 *              row-major index into shape (the fallback and pointwise kernels)
 *   AT_COORDS  dj_epilogue(batch, row, col, float acc0, float acc1, bool pair, args): the
 *              elements at columns col and (when pair) col + 1; batch is the linear index over
 *              shape's leading (batch) axes, row and col the last two coordinates (tiled GEMMs) */
typedef enum dnnjit__element_form { DNNJIT__ELEMENT_AT_INDEX, DNNJIT__ELEMENT_AT_COORDS } dnnjit__element_form_t;
struct dnnjit__group;
struct dnnjit__kernel;
void dnnjit__emit_group_element(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const struct dnnjit__group *grp,
                                const struct dnnjit__kernel *k, const dnnjit__tensor_t *shape, dnnjit_tensor_t mm,
                                dnnjit__element_form_t form);

/* Whether a GEMM group computes its matmul's input `slot` (0: A, 1: B) in a prologue. */
bool dnnjit__group_has_prologue(dnnjit_graph_t g, const struct dnnjit__group *grp, int slot);

/* The prologue of input `slot` of a GEMM group's matmul: the operand's element evaluated in
 * float by the group's prologue nodes, from the group's inputs (the caller rounds it to the
 * operand's type). The index space is the operand's [M, K] (A) or [K, N] (B) behind C's
 * batch axes. Forms, with x = a or b:
 *   AT_INDEX   float dj_x_prologue(i, args): i is the linear row-major index into the space
 *   AT_COORDS  float dj_x_prologue(batch, row, col, args): batch is the linear index over
 *              C's batch axes, row and col the operand's last two coordinates */
void dnnjit__emit_prologue(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const struct dnnjit__group *grp,
                           const struct dnnjit__kernel *k, int slot, dnnjit__element_form_t form);

#endif
