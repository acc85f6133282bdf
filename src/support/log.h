// The log: ROCUDA_LOG unset = warnings and errors only, to stderr; ROCUDA_LOG=1 (or stderr) =
// everything including every driver API call; ROCUDA_LOG=/path = everything, appended to that
// file. Thread-safe; one line per message, prefixed with "[rocuda] ".
#pragma once

#include <string>
#include <string_view>

namespace rocuda::log {

enum class Level { Error, Warning, Info, Trace };

// True when messages of this level are written (Trace and Info only when ROCUDA_LOG is set).
bool enabled(Level level);
void write(Level level, std::string_view message);

// An observer sees every Error and Warning message, printed or not (the driver API keeps them
// for cuLogs*). One observer at a time; nullptr removes it. It must not write to the log itself.
using Observer = void (*)(Level level, std::string_view message);
void setObserver(Observer observer);

inline void error(std::string_view message) { write(Level::Error, message); }
inline void warning(std::string_view message) { write(Level::Warning, message); }
inline void info(std::string_view message) { write(Level::Info, message); }
inline void trace(std::string_view message) { write(Level::Trace, message); }

}  // namespace rocuda::log
