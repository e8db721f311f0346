#pragma once
// The line at the bottom of a terminal that a progress bar redraws in place (with "\r").
// Log lines go to the same stderr: the logger erases the status line, writes its message
// and draws the status line again beneath it (status_line::Pause, used by logging.cpp), so
// messages never land in the middle of a bar. Thread-safe; does nothing until set() is
// called, so programs without a progress bar pay one uncontended mutex per log line.

#include <string>

namespace rdmax::status_line {

// Shows `text` as the status line, replacing the previous one.
void set(const std::string& text);
// Erases the status line; it stays hidden until the next set().
void clear();
// Prints `text` as a finished line (followed by a newline) where the status line was.
void finish_with(const std::string& text);

// While alive: the status line is erased and other writers to it wait.
class Pause {
 public:
  Pause();
  ~Pause();
  Pause(const Pause&) = delete;
  Pause& operator=(const Pause&) = delete;
};

}  // namespace rdmax::status_line
