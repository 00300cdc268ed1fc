/* Diagnostics for the JIT layer. They go to stderr only when the user asks with
 * DNNJIT_LOG, because a library must not write to a program's streams unasked. */
#include "jit/jit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool dnnjit__log_enabled(void)
{
    const char *v = getenv("DNNJIT_LOG");
    return v && *v && strcmp(v, "0") != 0;
}

void dnnjit__log(const char *fmt, ...)
{
    if (!dnnjit__log_enabled())
        return;
    /* One fprintf per line so that lines from several threads do not interleave. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "dnnjit: %s\n", line);
}
