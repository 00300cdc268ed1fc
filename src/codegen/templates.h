/* Kernel templates (the .cuh files of src/kernels) embedded in the library at build time. */
#ifndef DNNJIT_CODEGEN_TEMPLATES_H
#define DNNJIT_CODEGEN_TEMPLATES_H

typedef struct dnnjit__template {
    const char *name; /* file name, e.g. "pointwise.cuh" */
    const char *text;
} dnnjit__template_t;

/* Every template, ended by a {NULL, NULL} entry. */
extern const dnnjit__template_t dnnjit__templates[];

/* The text of a template by file name, or NULL. */
const char *dnnjit__template(const char *name);

#endif
