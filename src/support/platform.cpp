#include "support/platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

namespace rocuda::platform {

std::string executablePath() {
  char buffer[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return {};
  return std::string(buffer, static_cast<size_t>(n));
}

std::string libraryPathOf(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return info.dli_fname;
  return resolved;
}

std::string directoryOf(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

Result<std::vector<uint8_t>> readFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    auto code = errno == ENOENT ? ErrorCode::FileNotFound : ErrorCode::OperatingSystem;
    return makeError(code, "cannot read '" + path + "': " + std::strerror(errno));
  }
  std::vector<uint8_t> bytes;
  uint8_t chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      close(fd);
      return makeError(ErrorCode::OperatingSystem,
                       "cannot read '" + path + "': " + std::strerror(saved));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  close(fd);
  return bytes;
}

Status writeFileAtomically(const std::string& path, const uint8_t* data, size_t size) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  std::string temporary = path + ".tmp" + std::to_string(getpid()) + "." +
                          std::to_string(random() & 0xffffffu);
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return makeError(ErrorCode::OperatingSystem,
                     "cannot create '" + temporary + "': " + std::strerror(errno));
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, data + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno;
      close(fd);
      unlink(temporary.c_str());
      return makeError(ErrorCode::OperatingSystem,
                       "cannot write '" + temporary + "': " + std::strerror(saved));
    }
    written += static_cast<size_t>(n);
  }
  close(fd);
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    int saved = errno;
    unlink(temporary.c_str());
    return makeError(ErrorCode::OperatingSystem,
                     "cannot rename to '" + path + "': " + std::strerror(saved));
  }
  return Status::success();
}

Status createDirectories(const std::string& path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
        return makeError(ErrorCode::OperatingSystem,
                         "cannot create directory '" + partial + "': " + std::strerror(errno));
    }
  }
  return Status::success();
}

bool fileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

void removeFile(const std::string& path) { unlink(path.c_str()); }

std::string userCacheDirectory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return xdg;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache";
  return {};
}

unsigned hardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

std::string cpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? std::string() : line.substr(start);
      }
    }
  }
  return "host CPU";
}

uint64_t totalPhysicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : 0;
}

uint64_t availablePhysicalMemory() {
  long pages = sysconf(_SC_AVPHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : 0;
}

uint32_t processId() { return static_cast<uint32_t>(getpid()); }

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

uint64_t currentThreadHandle() { return static_cast<uint64_t>(pthread_self()); }

std::string findProgram(std::string_view program) {
  if (program.empty()) return {};
  auto executable = [](const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string_view::npos) {
    std::string path(program);
    return executable(path) ? path : std::string();
  }
  const char* pathVariable = std::getenv("PATH");
  std::string_view paths = pathVariable ? pathVariable : "/usr/local/bin:/usr/bin:/bin";
  while (!paths.empty()) {
    size_t colon = paths.find(':');
    std::string_view dir = paths.substr(0, colon);
    std::string candidate = std::string(dir.empty() ? "." : dir) + "/" + std::string(program);
    if (executable(candidate)) return candidate;
    if (colon == std::string_view::npos) break;
    paths.remove_prefix(colon + 1);
  }
  return {};
}

Error execWithEnvironment(const std::vector<std::string>& argv, const std::string& name,
                          const std::string& value) {
  if (setenv(name.c_str(), value.c_str(), 1) != 0)
    return makeError(ErrorCode::OperatingSystem, std::string("setenv: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  return makeError(ErrorCode::OperatingSystem,
                   "cannot run '" + argv[0] + "': " + std::strerror(errno));
}

size_t pageBytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

int numaNodeCount() {
  static const int count = [] {
    int nodes = 0;
    while (fileExists("/sys/devices/system/node/node" + std::to_string(nodes))) ++nodes;
    return std::max(nodes, 1);
  }();
  return count;
}

int pciNumaNode(int domain, int bus, int device) {
  char path[96];
  std::snprintf(path, sizeof path, "/sys/bus/pci/devices/%04x:%02x:%02x.0/numa_node", domain, bus,
                device);
  std::ifstream file(path);
  int node = -1;
  if (!(file >> node) || !isNumaNode(node)) return -1;
  return node;
}

bool isNumaNode(int node) { return node >= 0 && node < numaNodeCount(); }

Status placeOnNumaNode(void* address, size_t bytes, int node) {
  if (!isNumaNode(node))
    return makeError(ErrorCode::InvalidValue,
                     "host NUMA node " + std::to_string(node) + " does not exist");
  if (numaNodeCount() == 1 || bytes == 0) return Status::success();
  // mbind(2) through its system call: libnuma is not a dependency. MPOL_BIND = 2;
  // MPOL_MF_STRICT | MPOL_MF_MOVE = 1 | 2, the pages already touched moved as well.
  size_t page = pageBytes();
  uintptr_t start = reinterpret_cast<uintptr_t>(address) / page * page;
  uintptr_t end = reinterpret_cast<uintptr_t>(address) + bytes;
  constexpr size_t kMaskBits = 1024;
  std::vector<unsigned long> mask(kMaskBits / (8 * sizeof(unsigned long)), 0);
  if (static_cast<size_t>(node) >= kMaskBits)
    return makeError(ErrorCode::NotSupported,
                     "host NUMA node " + std::to_string(node) + " is past the node mask");
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
  if (syscall(SYS_mbind, start, end - start, 2, mask.data(), kMaskBits + 1, 1 | 2) != 0)
    return makeError(ErrorCode::OperatingSystem, "cannot place memory on host NUMA node " +
                                                     std::to_string(node) + ": " +
                                                     std::strerror(errno));
  return Status::success();
}

bool hostRangeMapped(const void* address, size_t bytes) {
  if (bytes == 0) return false;
  size_t page = pageBytes();
  uintptr_t start = reinterpret_cast<uintptr_t>(address) / page * page;
  uintptr_t end = reinterpret_cast<uintptr_t>(address) + bytes;
  if (end < start) return false;  // wraps
  size_t length = (end - start + page - 1) / page * page;
  std::vector<unsigned char> resident(length / page);
  // mincore fails with ENOMEM where part of the range is not mapped.
  return mincore(reinterpret_cast<void*>(start), length, resident.data()) == 0;
}

void* allocateStack(size_t bytes) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* memory = mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  mprotect(memory, page, PROT_NONE);
  return static_cast<char*>(memory) + page;
}

void freeStack(void* stack, size_t bytes) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  munmap(static_cast<char*>(stack) - page, bytes + page);
}

}  // namespace rocuda::platform
