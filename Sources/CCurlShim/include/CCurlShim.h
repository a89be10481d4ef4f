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

#endif
