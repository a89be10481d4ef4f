#include <zlib.h>

/// `deflateInit2` is a macro Swift cannot call: a gzip stream (window bits 15 + 16) at `level`.
static inline int czlib_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
