#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "CThreadName.h"

void herald_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = '\0';
#if defined(__APPLE__)
    pthread_setname_np(truncated);
#else
    pthread_setname_np(pthread_self(), truncated);
#endif
}
