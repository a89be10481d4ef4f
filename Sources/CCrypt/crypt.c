#include "CCrypt.h"

#include <crypt.h>
#include <stdlib.h>
#include <string.h>

int herald_crypt(const char *phrase, const char *setting, char *out, size_t capacity) {
    // struct crypt_data is ~32 KiB: too large for the stack of a cooperative-pool thread.
    struct crypt_data *data = calloc(1, sizeof *data);
    if (data == NULL) {
        return -1;
    }
    int status = -1;
    const char *result = crypt_rn(phrase, setting, data, (int)sizeof *data);
    if (result != NULL && strlen(result) < capacity) {
        strcpy(out, result);
        status = 0;
    }
    explicit_bzero(data, sizeof *data);
    free(data);
    return status;
}
