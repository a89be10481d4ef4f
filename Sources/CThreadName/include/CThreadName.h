#ifndef CTHREADNAME_H
#define CTHREADNAME_H

/// Names the calling thread for the kernel (`top -H`, `ps -L`, perf), truncated to its 15 bytes.
/// `pthread_setname_np` needs `_GNU_SOURCE`, which Swift's Glibc module does not define.
void herald_set_thread_name(const char *name);

#endif
