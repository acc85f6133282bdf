// Everything that touches the operating system goes through here (POSIX today; Win32 beside it
// later), so the rest of Rocuda is portable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/result.h"

namespace rocuda::platform {

// Absolute path of the running executable, or of the shared library containing `address`.
std::string executablePath();
std::string libraryPathOf(const void* address);
std::string directoryOf(std::string_view path);

Result<std::vector<uint8_t>> readFile(const std::string& path);
// Write to a temporary file in the same directory, then rename: readers never see a partial
// file, and concurrent writers of the same path each leave a complete one.
Status writeFileAtomically(const std::string& path, const uint8_t* data, size_t size);
Status createDirectories(const std::string& path);
bool fileExists(const std::string& path);
void removeFile(const std::string& path);

// The user's cache directory ($XDG_CACHE_HOME, else $HOME/.cache), empty when unknown.
std::string userCacheDirectory();

unsigned hardwareThreads();
std::string cpuModelName();
uint64_t totalPhysicalMemory();
uint64_t availablePhysicalMemory();
uint32_t processId();
std::string hostName();  // "localhost" when the system does not say
// pthread_self() of the calling thread, as an integer (what cudart's integrity check hashes).
uint64_t currentThreadHandle();

// Find `program` as execvp would (a path with '/' as is, else each PATH entry); empty if none.
std::string findProgram(std::string_view program);
// Replace this process by `argv[0]` with `argv`, after setting the environment variable `name`
// to `value`. Returns only on failure, with the reason.
Error execWithEnvironment(const std::vector<std::string>& argv, const std::string& name,
                          const std::string& value);

// The host's page size.
size_t pageBytes();
// The host's NUMA nodes (node ids 0 .. count - 1); 1 where the system does not say.
int numaNodeCount();
// Whether `node` is one of them.
bool isNumaNode(int node);
// The host NUMA node of PCI device domain:bus:device.0 (Linux's sysfs), or -1 when not known.
int pciNumaNode(int domain, int bus, int device);
// Put the pages of [address, address + bytes) on host NUMA node `node` (0 .. numaNodeCount() -
// 1), moving those already touched; nothing to do on a host of one node.
Status placeOnNumaNode(void* address, size_t bytes, int node);
// Whether every page of [address, address + bytes) is mapped in this process (bytes > 0).
bool hostRangeMapped(const void* address, size_t bytes);

// Memory with an inaccessible guard page below it (fiber stacks): overflow faults instead of
// silently corrupting a neighbour.
void* allocateStack(size_t bytes);
void freeStack(void* stack, size_t bytes);

}  // namespace rocuda::platform
