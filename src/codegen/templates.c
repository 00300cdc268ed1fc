#include "codegen/templates.h"

#include <string.h>

const char *dnnjit__template(const char *name)
{
    for (const dnnjit__template_t *t = dnnjit__templates; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t->text;
    return NULL;
}
