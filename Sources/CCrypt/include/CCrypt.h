#ifndef CCRYPT_H
#define CCRYPT_H

#include <stddef.h>

/// The system crypt(3) (libxcrypt) of `phrase` under `setting` (a whole stored hash such as `$2b$10$…`),
/// written NUL-terminated into `out`. Returns 0, or -1 when the setting is not one crypt knows or the result
/// does not fit in `capacity` bytes. Thread-safe: each call has its own scratch state, wiped before it is freed.
int herald_crypt(const char *phrase, const char *setting, char *out, size_t capacity);

#endif
