// KeepFreedMemoryOnHeap (see heap_tuning.h).
#include "core/base/heap_tuning.h"

#include <malloc.h>

namespace troupe {

void KeepFreedMemoryOnHeap() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace troupe
