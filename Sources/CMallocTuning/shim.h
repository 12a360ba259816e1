// glibc's malloc tuning (mallopt and its M_* parameters), for `reqtop proxy`. Nothing on
// other C libraries: the header is only read where it exists.
#if defined(__linux__) && __has_include(<malloc.h>)
#include <malloc.h>
#endif
