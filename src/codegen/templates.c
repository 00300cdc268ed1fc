#include "codegen/templates.h"

#include "codegen/codegen.h"

#include <string.h>

const char *dnnjit__template(const char *name)
{
    for (const dnnjit__template_t *t = dnnjit__templates; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t->text;
    return NULL;
}

void dnnjit__emit_reduce_mode(dnnjit__strbuf_t *sb, dnnjit_reduction_mode_t mode)
{
    dnnjit__sb_append(sb, dnnjit__template("reduce_modes.cuh"));
    dnnjit__sb_printf(sb, "\nconstexpr DjReduce DJ_MODE = DJ_REDUCE_%s;\n", dnnjit_reduction_mode_name(mode));
}
