/* The profiling interface: this implementation has no separate pshmem_ names; including this
 * header gives the shmem_ API. */
#include <shmem.h>
