#pragma once

namespace rdmax {

// Installs the default spdlog logger, writing to stderr.
//   verbosity: -1 quiet (warnings and errors), 0 normal (info), 1 verbose (debug), 2 trace.
// On a terminal lines carry time and a coloured level; otherwise (journald, pipes,
// files) they read "<level>: message", since journald stamps and tags lines itself.
// Under systemd (JOURNAL_STREAM names stderr) they read "<N>message", N the syslog
// priority (3 error ... 7 debug), which journald takes as the entry's level.
// `program` names the logger. May be called again to change the verbosity.
void init_logging(int verbosity, const char* program);

}  // namespace rdmax
