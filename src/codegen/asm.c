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
