#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>

/// Typed wrappers over libcurl's variadic calls, which Swift cannot call directly.
typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t nitems, void *userdata);

CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ccurl_easy_setopt_int64(CURL *handle, CURLoption option, curl_off_t value);
CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode ccurl_easy_setopt_callback(CURL *handle, CURLoption option, ccurl_data_callback callback);
CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);

/// CURLOPT_DEBUGFUNCTION's callback: (handle, type, data, size, userdata) -> 0.
typedef int (*ccurl_debug_callback)(CURL *handle, curl_infotype type, char *data, size_t size, void *userdata);
CURLcode ccurl_easy_setopt_debug(CURL *handle, ccurl_debug_callback callback);

/// The connection's socket (CURLINFO_ACTIVESOCKET), or -1 when there is none.
int ccurl_easy_active_socket(CURL *handle);

#endif
