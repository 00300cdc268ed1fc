/* Built against an installed dnnjit by tests/install/check, through pkg-config and through
 * the CMake package, to prove the installed header and library are usable. */
#include <dnnjit.h>
#include <stdio.h>

int main(void)
{
    dnnjit_graph_t g;
    if (dnnjit_graph_create(NULL, NULL, &g) != DNNJIT_STATUS_SUCCESS)
        return 1;
    dnnjit_graph_destroy(g);
    printf("dnnjit %s\n", dnnjit_version_string());
    return 0;
}
