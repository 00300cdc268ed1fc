/* Handles: the architecture kernels are compiled for and whether a GPU can run them. A
 * handle is made without a GPU as readily as with one; what is missing is only reported
 * when something needs it. */
#include "runtime/runtime.h"

#include "engine/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *load_nvrtc(void *unused)
{
    (void)unused;
    dnnjit__nvrtc_load(); /* its outcome is kept for the callers that need NVRTC */
    return NULL;
}

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t loader;
static bool loader_running; /* started and not yet joined */

/* Every build needs NVRTC, if only for its version in the kernel-cache key, and loading it
 * takes milliseconds (a library of a hundred megabytes with hundreds of static
 * constructors): most of a build from the disk cache. Loaded on a thread of its own while
 * the driver makes the device's context, it is ready when the first build asks, which then
 * waits only for what is left of the load. Once per process. */
static void start_loading_nvrtc(void)
{
    pthread_mutex_lock(&loader_lock);
    loader_running = pthread_create(&loader, NULL, load_nvrtc, NULL) == 0;
    pthread_mutex_unlock(&loader_lock);
}

/* Waits for the loading thread to end, if it has not been waited for. */
static void join_loader(void)
{
    pthread_mutex_lock(&loader_lock);
    if (loader_running)
        pthread_join(loader, NULL);
    loader_running = false;
    pthread_mutex_unlock(&loader_lock);
}

static pthread_once_t nvrtc_started = PTHREAD_ONCE_INIT;

dnnjit_status_t dnnjit_handle_create(dnnjit_handle_t *out)
{
    if (!out)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_handle_create: out is NULL");
    dnnjit_handle_t h = calloc(1, sizeof *h);
    if (!(*out = h))
        return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_handle_create: out of memory");
    /* Probing the driver must not leave this thread's last error behind on success. */
    char saved[DNNJIT__MSG_LEN];
    snprintf(saved, sizeof saved, "%s", dnnjit_last_error());
    dnnjit_status_t s = dnnjit__driver_load();
    if (!s)
        pthread_once(&nvrtc_started, start_loading_nvrtc);
    if (!s)
        s = dnnjit__driver_use_device(0);
    if (!s)
        s = dnnjit__driver_current_arch(h->arch);
    if (!s)
        s = dnnjit__driver_current_device_name(h->device_name, sizeof h->device_name);
    h->has_device = !s;
    h->launch_flags = !s && dnnjit__arch_number(h->arch) >= 90 ? DNNJIT__LAUNCH_DEPENDENT : 0;
    if (s) {
        snprintf(h->no_device_reason, sizeof h->no_device_reason, "%s", dnnjit_last_error());
        h->arch[0] = '\0';
        h->device_name[0] = '\0';
    }
    dnnjit__set_thread_error(saved);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_handle_create_for_arch(const char *arch, dnnjit_handle_t *out)
{
    if (!out)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_handle_create_for_arch: out is NULL");
    *out = NULL;
    if (!arch)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_handle_create_for_arch: arch is NULL");
    dnnjit_status_t s = dnnjit__check_arch(arch);
    if (s)
        return s;
    dnnjit_handle_t h = calloc(1, sizeof *h);
    if (!h)
        return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_handle_create_for_arch: out of memory");
    snprintf(h->arch, sizeof h->arch, "%s", arch);
    snprintf(h->no_device_reason, sizeof h->no_device_reason,
             "the handle was created for architecture %s without a device (dnnjit_handle_create_for_arch)", arch);
    *out = h;
    return DNNJIT_STATUS_SUCCESS;
}

/* A process that ends while NVRTC loads on the thread dnnjit_handle_create started tears
 * down what NVRTC's static constructors are using: `dnnjit plans` ended in a segfault or an
 * abort every time on the H200, and in a quarter of the runs with tests/stub_driver.c. So
 * the handle waits for that thread to end before it goes; waiting only for the load to be
 * done left the thread's own exit racing the process's (a run under CI's sanitizers once
 * exited with an error). Waiting at exit instead (atexit) is too late: NVRTC's own exit
 * handlers, registered after, run first, and the loading thread then spun forever. */
void dnnjit_handle_destroy(dnnjit_handle_t handle)
{
    if (handle && handle->has_device)
        join_loader();
    free(handle);
}

dnnjit_status_t dnnjit_handle_get_arch(dnnjit_handle_t h, char *arch, size_t size, bool *has_device)
{
    if (!h || !arch)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_handle_get_arch: %s is NULL", h ? "arch" : "handle");
    if (size <= strlen(h->arch))
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_handle_get_arch: %zu bytes cannot hold \"%s\"", size,
                            h->arch);
    memcpy(arch, h->arch, strlen(h->arch) + 1);
    if (has_device)
        *has_device = h->has_device;
    return DNNJIT_STATUS_SUCCESS;
}
