// Whole-file reads and crash-safe writes (a temporary file, then a rename:
// a reader sees the old file or the new one, never half of one).
#pragma once

#include <string>

namespace troupe {

// Throws Error naming the path when it cannot be read.
std::string ReadWholeFile(const std::string& path);

// Creates the parent folder when missing; writes a temporary file, syncs it,
// renames it over `path` and syncs the folder: after a crash the file is the
// old one or the new one, and a full disk is an Error naming the path.
void WriteFileAtomically(const std::string& path, const std::string& content);

// fsync: a file's (or folder's) written bytes reach the disk. A write error
// that only surfaces now (a full disk) is an Error naming the path; folders
// on filesystems that cannot sync them are let be.
void SyncToDisk(const std::string& path);

}  // namespace troupe
