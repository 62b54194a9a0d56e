// Training and rollouts allocate and free the same large tensors every step.
// glibc returns large blocks to the system (mmap/munmap per tensor), and each
// new one then page-faults in again; keeping them on the heap avoids that
// storm. Every troupe program that runs models calls this first.
#pragma once

namespace troupe {

void KeepFreedMemoryOnHeap();

}  // namespace troupe
