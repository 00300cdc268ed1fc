/* Generated device functions made of one volatile asm statement, for the GEMM engines'
 * accumulator registers (declared in codegen.h). */
#include "codegen/codegen.h"

void dnnjit__asm_line(dnnjit__strbuf_t *text, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dnnjit__sb_append(text, "                 \"");
    dnnjit__sb_vprintf(text, fmt, ap);
    dnnjit__sb_append(text, "\\n\"\n");
    va_end(ap);
}

void dnnjit__emit_asm_function(dnnjit__strbuf_t *sb, const char *head, dnnjit__strbuf_t *text, const char *operands)
{
    /* A line lost to a failed allocation would compile to a wrong kernel: the failure sticks
     * to the source instead. */
    if (text->failed)
        sb->failed = true;
    dnnjit__sb_printf(sb, "__device__ __forceinline__ void %s\n{\n    asm volatile(\"\"\n%s                 %s);\n}\n", head,
                      text->data ? text->data : "", operands);
    dnnjit__sb_free(text);
}

void dnnjit__emit_reg_moves(dnnjit__strbuf_t *sb, const char *head, const dnnjit__reg_moves_t *m)
{
    dnnjit__strbuf_t text = {0}, operands = {0};
    int regs_moved = m->halves ? m->n / 2 : m->n;
    if (m->halves)
        dnnjit__asm_line(&text, "{\\n.reg .b16 l, h;");
    for (int i = 0; i < regs_moved; i++) {
        if (m->halves)
            dnnjit__asm_line(&text, "mov.b32 {l, h}, %s%d;\\ncvt.f32.f16 %%%d, l;\\ncvt.f32.f16 %%%d, h;", m->reg, i,
                             2 * i, 2 * i + 1);
        else if (m->write)
            dnnjit__asm_line(&text, "mov.b32 %s%d, %%%d;", m->reg, i, i);
        else
            dnnjit__asm_line(&text, "mov.b32 %%%d, %s%d;", i, m->reg, i);
    }
    for (int i = 0; m->shift && i + regs_moved < m->count; i++)
        dnnjit__asm_line(&text, "mov.b32 %s%d, %s%d;", m->reg, i, m->reg, i + regs_moved);
    if (m->halves)
        dnnjit__asm_line(&text, "}");
    dnnjit__sb_append(&operands, m->write ? "::" : ":");
    for (int i = 0; i < m->n; i++) {
        dnnjit__sb_printf(&operands, "%s\"%sf\"(v", i ? ", " : " ", m->write ? "" : "=");
        if (m->nested > 0)
            dnnjit__sb_printf(&operands, "[%d][%d][%d])", i / 4 / m->nested, i / 4 % m->nested, i % 4);
        else
            dnnjit__sb_printf(&operands, "[%d])", i);
    }
    if (operands.failed)
        sb->failed = true;
    dnnjit__emit_asm_function(sb, head, &text, operands.data ? operands.data : "");
    dnnjit__sb_free(&operands);
}
