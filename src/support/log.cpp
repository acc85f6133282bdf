#include "support/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "support/env.h"

namespace rocuda::log {
namespace {

struct Sink {
  std::FILE* file = stderr;
  bool verbose = false;

  Sink() {
    auto value = env::get("ROCUDA_LOG");
    if (!value) return;
    verbose = (*value != "0");
    if (!verbose || *value == "1" || *value == "stderr") return;
    // A log level is not a setting ROCUDA_LOG has; someone who writes one means "log", not a
    // file of that name in the current directory (./info still names one).
    for (const char* level : {"info", "debug", "trace", "verbose", "warning", "warn", "error",
                              "all", "on", "yes", "true"})
      if (*value == level) {
        std::fprintf(stderr,
                     "[rocuda] warning: ROCUDA_LOG=%s is not a level (it takes 1 or stderr, 0, "
                     "or a file path such as ./%s); logging to stderr\n",
                     value->c_str(), value->c_str());
        return;
      }
    if (std::FILE* f = std::fopen(value->c_str(), "a")) {
      file = f;
    } else {
      std::fprintf(stderr, "[rocuda] warning: cannot open ROCUDA_LOG file '%s'; logging to stderr\n",
                   value->c_str());
    }
  }
};

Sink& sink() {
  static Sink instance;  // first use reads the environment; never destroyed before exit handlers
  return instance;
}

std::mutex& sinkMutex() {
  static std::mutex mutex;
  return mutex;
}

const char* levelPrefix(Level level) {
  switch (level) {
    case Level::Error: return "error: ";
    case Level::Warning: return "warning: ";
    case Level::Info: return "";
    case Level::Trace: return "";
  }
  return "";
}

std::atomic<Observer>& observer() {
  static std::atomic<Observer> instance{nullptr};
  return instance;
}

}  // namespace

void setObserver(Observer o) { observer().store(o); }

bool enabled(Level level) {
  return level == Level::Error || level == Level::Warning || sink().verbose;
}

void write(Level level, std::string_view message) {
  if (level == Level::Error || level == Level::Warning) {
    if (Observer o = observer().load()) o(level, message);
  }
  if (!enabled(level)) return;
  std::string line = "[rocuda] ";
  line += levelPrefix(level);
  line += message;
  if (line.empty() || line.back() != '\n') line += '\n';
  std::lock_guard lock(sinkMutex());
  std::fwrite(line.data(), 1, line.size(), sink().file);
  std::fflush(sink().file);
}

}  // namespace rocuda::log
